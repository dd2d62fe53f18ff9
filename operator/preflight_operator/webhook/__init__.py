"""The admission webhooks: the HTTPS server and the admission service that answers
/mutate and /validate from the core's decisions."""
