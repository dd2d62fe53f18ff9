{{/* The operator configuration file, rendered from values (YAML). */}}
{{- define "vllm-preflight.operatorConfig" -}}
{{- $p := .Values.defaultPolicy }}
{{- $i := .Values.injection }}
{{- $config := dict
  "defaultPolicy" (dict
    "action" $p.action
    "tier" $p.tier
    "thresholds" (dict "shmMin" (toString $p.thresholds.shmMin) "extraGPUsAllowed" (int $p.thresholds.extraGPUsAllowed))
    "checks" (dict "disabled" ($p.checks.disabled | default list))
    "onRuntimeFailure" $p.onRuntimeFailure)
  "injection" (dict
    "mode" $i.mode
    "installerImage" (include "vllm-preflight.image" .)
    "checkImage" (include "vllm-preflight.checkImage" .)
    "imagePullPolicy" $i.imagePullPolicy
    "resources" $i.resources
    "timeoutSeconds" (int $i.timeoutSeconds)
    "groupPort" (int ($i.groupPort | default 29600)))
  "namespaceLabel" .Values.webhook.optInLabel
  "excludedNamespaces" (include "vllm-preflight.excludedNamespaces" . | fromJsonArray)
  "history" (dict "podsPerWorkload" (int .Values.history.podsPerWorkload))
  "podTrust" (dict "creators" (.Values.podTrust.creators | default list))
  "rules" (dict
    "budgetSeconds" (.Values.rules.budgetSeconds | float64)
    "memoryMiB" (int .Values.rules.memoryMiB)
    "workers" (int .Values.rules.workers))
  "webhook" (include "vllm-preflight.webhookServerConfig" . | fromYaml)
  "nodeFeedback" (dict
    "enabled" (eq (toString .Values.nodeFeedback.enabled) "true")
    "condition" (eq (toString .Values.nodeFeedback.condition) "true")
    "probe" (dict
      "intervalSeconds" (int ((.Values.nodeFeedback.probe | default dict).intervalSeconds | default 300))
      "maxRunning" (int ((.Values.nodeFeedback.probe | default dict).maxRunning | default 4))
      "startSeconds" (int ((.Values.nodeFeedback.probe | default dict).startSeconds | default 300))))
}}
{{- /* where the ClusterRole/Roles grant patch on workloads (clusterrole.yaml); with
rbac.create=false the user binds the rules: nothing said, the operator tries everywhere */}}
{{- if .Values.rbac.create }}
{{- $_ := set $config "workloadPatch" (dict
  "scope" .Values.rbac.workloadPatch
  "namespaces" (.Values.rbac.workloadNamespaces | default list)) }}
{{- end }}
{{- /* per-rule actions (rules.certainty): only when some are set */}}
{{- if $p.rules }}
{{- $_ := set $config.defaultPolicy "rules" $p.rules }}
{{- end }}
{{- /* models: only when a source is on (modelcache.py; no model rule at admission else) */}}
{{- $m := .Values.models | default dict }}
{{- $fetch := $m.fetch | default dict }}
{{- if or $m.configMap $fetch.enabled }}
{{- $models := dict "fetch" (eq (toString $fetch.enabled) "true") }}
{{- if $m.configMap }}
{{- $_ := set $models "configMap" $m.configMap }}
{{- $_ := set $models "configMapNamespace" .Release.Namespace }}
{{- end }}
{{- if $fetch.enabled }}
{{- $_ := set $models "endpoint" ($fetch.endpoint | default "https://huggingface.co") }}
{{- $_ := set $models "timeoutSeconds" ($fetch.timeoutSeconds | default 5) }}
{{- $_ := set $models "cacheDir" (include "vllm-preflight.modelCacheDir" .) }}
{{- end }}
{{- $_ := set $config "models" $models }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/* Where the operator keeps the model configs it fetched (an emptyDir, models.fetch). */}}
{{- define "vllm-preflight.modelCacheDir" -}}
/var/cache/vllm-preflight/models
{{- end }}

{{/* The operator's `webhook` section: the webhooks' failure answers, denial Events, the
port's limits (core/operatorconfig.py parse_webhook). */}}
{{- define "vllm-preflight.webhookServerConfig" -}}
{{- $w := .Values.webhook }}
{{- $e := $w.admissionEvents | default dict }}
{{- $s := $w.server | default dict }}
{{- toYaml (dict
  "validating" (dict "failurePolicy" $w.validating.failurePolicy "timeoutSeconds" (int $w.validating.timeoutSeconds))
  "mutating" (dict "failurePolicy" $w.mutating.failurePolicy "timeoutSeconds" (int $w.mutating.timeoutSeconds))
  "admissionEvents" (dict "enabled" (eq (toString $e.enabled) "true") "perMinute" (int ($e.perMinute | default 60)))
  "server" (dict
    "maxConnections" (int ($s.maxConnections | default 512))
    "maxConnectionsPerPeer" (int ($s.maxConnectionsPerPeer | default 128))
    "headerTimeoutSeconds" ($s.headerTimeoutSeconds | default 10 | float64)
    "bodyTimeoutSeconds" ($s.bodyTimeoutSeconds | default 10 | float64)
    "idleTimeoutSeconds" ($s.idleTimeoutSeconds | default 60 | float64))) }}
{{- end }}
