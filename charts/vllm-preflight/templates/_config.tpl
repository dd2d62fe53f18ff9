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
}}
{{- toYaml $config }}
{{- end }}
