{{/*
Helpers of the vllm-preflight chart. Every helper is prefixed `vllm-preflight.`.
*/}}

{{/* Chart name, overridable with nameOverride. */}}
{{- define "vllm-preflight.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: the prefix of every namespaced object and the name of the webhook Service. Kept
to 52 characters so that suffixes (`-webhook-ca`, `-test`) stay within 63.
*/}}
{{- define "vllm-preflight.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Chart label value: name-version. */}}
{{- define "vllm-preflight.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels identifying this release's objects. */}}
{{- define "vllm-preflight.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vllm-preflight.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels selecting the operator pods (the Deployment's immutable selector; the Service's). */}}
{{- define "vllm-preflight.operatorSelectorLabels" -}}
{{ include "vllm-preflight.selectorLabels" . }}
app.kubernetes.io/component: operator
{{- end }}

{{/* Labels of every object. */}}
{{- define "vllm-preflight.labels" -}}
helm.sh/chart: {{ include "vllm-preflight.chart" . }}
{{ include "vllm-preflight.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: vllm-preflight
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The operator's ServiceAccount name. */}}
{{- define "vllm-preflight.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "vllm-preflight.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* An image reference from {repository, tag, digest}; the digest wins, the tag defaults to appVersion. */}}
{{- define "vllm-preflight.imageRef" -}}
{{- $image := index . 0 }}
{{- $root := index . 1 }}
{{- if $image.digest }}
{{- printf "%s@%s" $image.repository $image.digest }}
{{- else }}
{{- printf "%s:%s" $image.repository (default $root.Chart.AppVersion $image.tag) }}
{{- end }}
{{- end }}

{{/* The operator image (also the installer image of the injected preflight-install container). */}}
{{- define "vllm-preflight.image" -}}
{{- include "vllm-preflight.imageRef" (list .Values.image .) }}
{{- end }}

{{/* The dedicated check image. */}}
{{- define "vllm-preflight.checkImage" -}}
{{- include "vllm-preflight.imageRef" (list .Values.checkImage .) }}
{{- end }}

{{/* Name of the ConfigMap holding the operator configuration file. */}}
{{- define "vllm-preflight.configMapName" -}}
{{- include "vllm-preflight.fullname" . }}
{{- end }}

{{/* Name of the leader-election Lease (the operator's default --lease-name). */}}
{{- define "vllm-preflight.leaseName" -}}
vllm-preflight
{{- end }}

{{/* Name of the Secret with the webhook serving certificate (tls.crt, tls.key, ca.crt). */}}
{{- define "vllm-preflight.webhookSecretName" -}}
{{- printf "%s-webhook-tls" (include "vllm-preflight.fullname" .) }}
{{- end }}

{{/* Name of the Secret with the self-signed CA (never mounted anywhere). */}}
{{- define "vllm-preflight.webhookCASecretName" -}}
{{- printf "%s-webhook-ca" (include "vllm-preflight.fullname" .) }}
{{- end }}

{{/* Name of the cert-manager Certificate of the serving certificate. */}}
{{- define "vllm-preflight.certificateName" -}}
{{- printf "%s-webhook" (include "vllm-preflight.fullname" .) }}
{{- end }}

{{/* Namespaces the webhooks never see: the configured system namespaces plus the release namespace. */}}
{{- define "vllm-preflight.excludedNamespaces" -}}
{{- $excluded := .Values.webhook.excludedNamespaces | default list }}
{{- toJson (append $excluded .Release.Namespace | uniq) }}
{{- end }}

{{/*
DNS names of the webhook Service, as the API server dials it (<svc>.<ns>.svc) and its
shorter and longer forms.
*/}}
{{- define "vllm-preflight.webhookDNSNames" -}}
{{- $svc := include "vllm-preflight.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- toJson (list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.webhook.clusterDomain)) }}
{{- end }}

{{/*
Self-signed webhook certificates, computed once per render and memoised in
.Values._vllmPreflightCerts so that the Secret and both webhook configurations get the same
bytes. Reuse across upgrades (the trap: regenerating on every upgrade would change the CA
under running replicas):
- the CA comes from the Secret <fullname>-webhook-ca when it exists (lookup), otherwise it
  is generated;
- the serving certificate is reused when its Secret exists, was signed by that CA, carries
  the current DNS names and is not within renewBeforeDays of expiry; otherwise it is
  re-signed by the same CA, so the caBundle does not change.
`helm template` and client-side dry runs cannot look up: they render fresh certificates.
*/}}
{{- define "vllm-preflight.selfSignedCerts" -}}
{{- if not (hasKey .Values "_vllmPreflightCerts") }}
{{- $cfg := .Values.webhook.certs.selfSigned }}
{{- $dnsNames := include "vllm-preflight.webhookDNSNames" . | fromJsonArray }}
{{- $now := now | unixEpoch | int64 }}
{{- $caSecret := lookup "v1" "Secret" .Release.Namespace (include "vllm-preflight.webhookCASecretName" .) | default dict }}
{{- $tlsSecret := lookup "v1" "Secret" .Release.Namespace (include "vllm-preflight.webhookSecretName" .) | default dict }}
{{- $caCrt := dig "data" "tls.crt" "" $caSecret }}
{{- $caKey := dig "data" "tls.key" "" $caSecret }}
{{- $ca := dict }}
{{- $caReused := false }}
{{- if and $caCrt $caKey }}
{{- $ca = buildCustomCert $caCrt $caKey }}
{{- $caReused = true }}
{{- else }}
{{- $ca = genCA (printf "%s-webhook-ca" (include "vllm-preflight.fullname" .)) (int $cfg.caValidityDays) }}
{{- end }}
{{- $tlsCrt := dig "data" "tls.crt" "" $tlsSecret }}
{{- $tlsKey := dig "data" "tls.key" "" $tlsSecret }}
{{- $tlsCA := dig "data" "ca.crt" "" $tlsSecret }}
{{- $notAfter := dig "metadata" "annotations" "vllm-preflight.io/not-after" "0" $tlsSecret | int64 }}
{{- $names := dig "metadata" "annotations" "vllm-preflight.io/dns-names" "" $tlsSecret }}
{{- $renewAt := add $now (mul (int $cfg.renewBeforeDays) 86400) }}
{{- $reuse := and $caReused $tlsCrt $tlsKey (eq ($tlsCA | b64dec) $ca.Cert) (eq $names (join "," $dnsNames)) (gt $notAfter $renewAt) }}
{{- $certs := dict "caCert" $ca.Cert "caKey" $ca.Key }}
{{- if $reuse }}
{{- $_ := set $certs "cert" ($tlsCrt | b64dec) }}
{{- $_ := set $certs "key" ($tlsKey | b64dec) }}
{{- $_ := set $certs "notAfter" $notAfter }}
{{- else }}
{{- $leaf := genSignedCert (index $dnsNames 2) nil $dnsNames (int $cfg.certValidityDays) $ca }}
{{- $_ := set $certs "cert" $leaf.Cert }}
{{- $_ := set $certs "key" $leaf.Key }}
{{- $_ := set $certs "notAfter" (add $now (mul (int $cfg.certValidityDays) 86400)) }}
{{- end }}
{{- $_ := set $certs "dnsNames" (join "," $dnsNames) }}
{{- $_ := set .Values "_vllmPreflightCerts" $certs }}
{{- end }}
{{- end }}

{{/* The caBundle (base64 PEM) of the webhook configurations in selfSigned mode. */}}
{{- define "vllm-preflight.caBundle" -}}
{{- include "vllm-preflight.selfSignedCerts" . }}
{{- .Values._vllmPreflightCerts.caCert | b64enc }}
{{- end }}

{{/* Annotations of the webhook configurations (cert-manager's CA injection in certManager mode). */}}
{{- define "vllm-preflight.webhookAnnotations" -}}
{{- if eq .Values.webhook.certs.mode "certManager" }}
cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "vllm-preflight.certificateName" .) }}
{{- end }}
{{- end }}

{{/* clientConfig of a webhook entry: the chart's Service on 443 at `path`. */}}
{{- define "vllm-preflight.webhookClientConfig" -}}
{{- $root := index . 0 }}
{{- $path := index . 1 -}}
service:
  name: {{ include "vllm-preflight.fullname" $root }}
  namespace: {{ $root.Release.Namespace }}
  path: {{ $path }}
  port: 443
{{- if eq $root.Values.webhook.certs.mode "selfSigned" }}
caBundle: {{ include "vllm-preflight.caBundle" $root }}
{{- end }}
{{- end }}

{{/*
namespaceSelector / objectSelector of the two kinds of webhook entries (selectors cannot be
ORed within one entry, hence two entries):
- "namespace": namespaces labelled <optInLabel>=enabled, minus the excluded ones; objects
  labelled <optInLabel>=disabled opt out.
- "object": objects labelled <optInLabel>=enabled in namespaces neither opted in nor out
  (a namespace labelled `disabled` wins over a pod's opt-in), minus the excluded ones.
Argument: (list $root "namespace"|"object").
*/}}
{{- define "vllm-preflight.webhookNamespaceSelector" -}}
{{- $root := index . 0 }}
{{- $scope := index . 1 }}
{{- $label := $root.Values.webhook.optInLabel -}}
matchExpressions:
  {{- if eq $scope "namespace" }}
  - key: {{ $label }}
    operator: In
    values: [enabled]
  {{- else }}
  - key: {{ $label }}
    operator: NotIn
    values: [enabled, disabled]
  {{- end }}
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: {{ include "vllm-preflight.excludedNamespaces" $root }}
  {{- with $root.Values.webhook.namespaceSelectorExpressions }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{- define "vllm-preflight.webhookObjectSelector" -}}
{{- $root := index . 0 }}
{{- $scope := index . 1 }}
{{- $label := $root.Values.webhook.optInLabel -}}
matchExpressions:
  {{- if eq $scope "namespace" }}
  - key: {{ $label }}
    operator: NotIn
    values: [disabled]
  {{- else }}
  - key: {{ $label }}
    operator: In
    values: [enabled]
  {{- end }}
  {{- with $root.Values.webhook.objectSelectorExpressions }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/* Scopes of the webhook entries: always "namespace", plus "object" with webhook.podOptIn. */}}
{{- define "vllm-preflight.webhookScopes" -}}
{{- if .Values.webhook.podOptIn }}["namespace", "object"]{{ else }}["namespace"]{{ end }}
{{- end }}

{{/* Guard rails that the schema cannot express. */}}
{{- define "vllm-preflight.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicaCount > 1 needs leaderElection.enabled=true: without leader election every replica would write (double writes)" }}
{{- end }}
{{- if and .Values.leaderElection.enabled (ge (float64 .Values.leaderElection.renewDeadlineSeconds) (float64 .Values.leaderElection.leaseDurationSeconds)) }}
{{- fail "leaderElection.renewDeadlineSeconds must be shorter than leaderElection.leaseDurationSeconds (a leader that cannot renew must stop writing before another replica may take over)" }}
{{- end }}
{{- if and .Values.leaderElection.enabled (ge (float64 .Values.leaderElection.retryPeriodSeconds) (float64 .Values.leaderElection.renewDeadlineSeconds)) }}
{{- fail "leaderElection.retryPeriodSeconds must be shorter than leaderElection.renewDeadlineSeconds" }}
{{- end }}
{{- if and .Values.webhook.certs.certManager.issuerRef (not .Values.webhook.certs.certManager.issuerRef.name) }}
{{- fail "webhook.certs.certManager.issuerRef needs a name" }}
{{- end }}
{{- end }}

{{/* Name of the leader-election Role and RoleBinding (63 characters at most). */}}
{{- define "vllm-preflight.leaderElectionRoleName" -}}
{{- printf "%s-leader-election" (include "vllm-preflight.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
