{{/* The chart's name, or nameOverride: the app.kubernetes.io/name label, and part of every object's name. */}}
{{- define "nodemedic.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Base name of every object: fullnameOverride; else the release name when it already contains the name,
else RELEASE-NAME. At most 50 characters, so that NAME-remediator (61) fits a Service name (63). */}}
{{- define "nodemedic.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "nodemedic.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "nodemedic.agent.name" -}}{{ include "nodemedic.fullname" . }}-agent{{- end -}}
{{- define "nodemedic.remediator.name" -}}{{ include "nodemedic.fullname" . }}-remediator{{- end -}}

{{/* The ServiceAccount a component's pods run as and its RBAC binds: the chart's own (named NAME-COMPONENT unless
serviceAccount.name says otherwise), or, with serviceAccount.create false, the existing one serviceAccount.name
names (required: binding the namespace's "default" account would hand these rights to every pod using it). */}}
{{- define "nodemedic.serviceAccountName" -}}
{{- $sa := get .root.Values .component | dig "serviceAccount" dict -}}
{{- if ($sa.create | default false) -}}
{{- $sa.name | default (include (printf "nodemedic.%s.name" .component) .root) -}}
{{- else -}}
{{- required (printf "%s.serviceAccount.name: required when %s.serviceAccount.create is false (the existing ServiceAccount the %s runs as; the chart binds its RBAC to it)" .component .component .component) $sa.name -}}
{{- end -}}
{{- end -}}
{{- define "nodemedic.agent.serviceAccountName" -}}
{{- include "nodemedic.serviceAccountName" (dict "root" . "component" "agent") -}}
{{- end -}}
{{- define "nodemedic.remediator.serviceAccountName" -}}
{{- include "nodemedic.serviceAccountName" (dict "root" . "component" "remediator") -}}
{{- end -}}

{{/* The release namespace, refused unless a Kubernetes namespace name (a DNS-1123 label): helm checks the release
name but not the namespace, which every object, RBAC subject, CEL expression and PromQL matcher of the chart names. */}}
{{- define "nodemedic.namespace" -}}
{{- if not (and (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .Release.Namespace) (le (len .Release.Namespace) 63)) -}}
{{- fail (printf "the release namespace %q is not a Kubernetes namespace name (at most 63 of a-z, 0-9 and '-', starting and ending with a letter or digit)" .Release.Namespace) -}}
{{- end -}}
{{- .Release.Namespace -}}
{{- end -}}

{{/* The remediator's Lease, one per release (passed as --lease-name). */}}
{{- define "nodemedic.leaseName" -}}{{ include "nodemedic.remediator.name" . }}{{- end -}}

{{/* The ConfigMap the leading remediator keeps the placement engine's savings in (remediator/model/savings.py). */}}
{{- define "nodemedic.savingsLedger" -}}{{ include "nodemedic.remediator.name" . }}-savings{{- end -}}

{{/* The agent writes its Events into this namespace (agent/reporting/reporter.py). */}}
{{- define "nodemedic.agent.eventsNamespace" -}}default{{- end -}}

{{- define "nodemedic.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Every inserted string is quoted: a release named `on`, `null` or `123` (valid names) must stay a string. */}}
{{- define "nodemedic.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
app.kubernetes.io/name: {{ include "nodemedic.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
{{- end -}}

{{- define "nodemedic.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodemedic.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
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
system:serviceaccount:{{ include "nodemedic.namespace" . }}:{{ include "nodemedic.agent.serviceAccountName" . }}
{{- end -}}

{{/* A file's text as a ConfigMap holds it: without leading or trailing blank lines, without whitespace on its blank
lines, ending in one newline (empty stays empty). The ConfigMaps write their data with toYaml, never into a block
scalar by hand: a first line that starts with spaces, a carriage return or a line separator in the text would end
such a block early and turn the rest into keys of the object. */}}
{{- define "nodemedic.fileText" -}}
{{- $text := regexReplaceAll "(?m)^[ \t]+$" (. | trimAll "\n") "" -}}
{{- if $text }}{{ $text }}{{ "\n" }}{{ end -}}
{{- end -}}

{{/* How the remediator runs: "deployment" (the controller) or "cronjob" (one cycle per run); anything else fails. */}}
{{- define "nodemedic.remediator.mode" -}}
{{- $mode := .Values.remediator.mode | default "deployment" -}}
{{- if not (has $mode (list "deployment" "cronjob")) -}}
{{- fail (printf "remediator.mode: must be deployment or cronjob, got %q" $mode) -}}
{{- end -}}
{{- $name := include "nodemedic.remediator.name" . -}}
{{- if and (eq $mode "cronjob") (gt (len $name) 52) -}}
{{- fail (printf "remediator.mode cronjob: the CronJob's name %s is %d characters, Kubernetes allows 52: set fullnameOverride (or a shorter release name)" $name (len $name)) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{/* The two priority classes GKE (and any cluster whose ResourceQuota admission lists them in limitedResources)
admits outside kube-system only where a ResourceQuota covers them. */}}
{{- define "nodemedic.systemPriorityClasses" -}}
{{- list "system-node-critical" "system-cluster-critical" | toJson -}}
{{- end -}}

{{/* "true" when the chart renders its ResourceQuota for them: priorityClassQuota.create, a pod of the chart uses
one of them, and the release namespace is not kube-system (which has its own on GKE). */}}
{{- define "nodemedic.priorityClassQuota.enabled" -}}
{{- $system := include "nodemedic.systemPriorityClasses" . | fromJsonArray -}}
{{- $used := or (has .Values.agent.priorityClassName $system) (has .Values.remediator.priorityClassName $system) -}}
{{- if and .Values.priorityClassQuota.create $used (ne .Release.Namespace "kube-system") -}}true{{- end -}}
{{- end }}
