{{/* Base name of every object: the release name when it already says "nodemedic", else release-nodemedic. */}}
{{- define "nodemedic.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "nodemedic.agent.name" -}}{{ include "nodemedic.fullname" . }}-agent{{- end -}}
{{- define "nodemedic.remediator.name" -}}{{ include "nodemedic.fullname" . }}-remediator{{- end -}}

{{/* The remediator's Lease, one per release (passed as --lease-name). */}}
{{- define "nodemedic.leaseName" -}}{{ include "nodemedic.remediator.name" . }}{{- end -}}

{{/* The agent writes its Events into this namespace (agent/reporting/reporter.py). */}}
{{- define "nodemedic.agent.eventsNamespace" -}}default{{- end -}}

{{- define "nodemedic.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "nodemedic.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "nodemedic.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nodemedic.agent.selectorLabels" -}}
{{ include "nodemedic.selectorLabels" . }}
app.kubernetes.io/component: agent
{{- end -}}

{{- define "nodemedic.remediator.selectorLabels" -}}
{{ include "nodemedic.selectorLabels" . }}
app.kubernetes.io/component: remediator
{{- end -}}

{{- define "nodemedic.agent.labels" -}}
{{ include "nodemedic.labels" . }}
app.kubernetes.io/component: agent
{{- end -}}

{{- define "nodemedic.remediator.labels" -}}
{{ include "nodemedic.labels" . }}
app.kubernetes.io/component: remediator
{{- end -}}

{{/* The agent config file: the agent.config value, else the shipped default. */}}
{{- define "nodemedic.agent.config" -}}
{{- if .Values.agent.config -}}
{{- .Values.agent.config -}}
{{- else -}}
{{- .Files.Get "files/agent.yaml" -}}
{{- end -}}
{{- end -}}

{{/* The remediation policy: the remediator.policy value, else the shipped default. */}}
{{- define "nodemedic.policy" -}}
{{- if .Values.remediator.policy -}}
{{- .Values.remediator.policy -}}
{{- else -}}
{{- .Files.Get "files/policy.yaml" -}}
{{- end -}}
{{- end -}}

{{/* The agent ServiceAccount's user name, as the API server sees it. */}}
{{- define "nodemedic.agent.username" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "nodemedic.agent.name" . }}
{{- end -}}

{{/* A file's text as the body of a `|` block indented by .indent, without whitespace on its blank lines. */}}
{{- define "nodemedic.fileBlock" -}}
{{- regexReplaceAll "(?m)^[ \t]+$" (.content | trimAll "\n" | nindent (int .indent)) "" -}}
{{- end -}}

{{/* How the remediator runs: "deployment" (the controller) or "cronjob" (one cycle per run); anything else fails. */}}
{{- define "nodemedic.remediator.mode" -}}
{{- $mode := .Values.remediator.mode | default "deployment" -}}
{{- if not (has $mode (list "deployment" "cronjob")) -}}
{{- fail (printf "remediator.mode: must be deployment or cronjob, got %q" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end }}
