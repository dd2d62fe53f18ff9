"""The admission webhooks: the HTTPS server (webhookserver.py), the AdmissionReview envelopes
in and out (admissionreview.py for /validate and /mutate-pods, provenancereview.py for
/validate-provenance) and the admission service that answers them from the core's
decisions (webhooks.py)."""
