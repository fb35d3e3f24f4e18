{{/*
Names, labels and the few decisions more than one template needs: which Secret holds the
credentials, where the database is, and the values check. Templates only lay out resources.
*/}}

{{/* Chart name, or nameOverride. */}}
{{- define "queen.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Resource name prefix: `<release>-queen`, or the release name alone when it already contains
the chart name. Kept at 50 characters so suffixes such as `-postgresql` stay within the
63-character limit of DNS labels.
*/}}
{{- define "queen.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Chart name and version, for the helm.sh/chart label. */}}
{{- define "queen.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every resource of the release carries. */}}
{{- define "queen.labels" -}}
helm.sh/chart: {{ include "queen.chart" . }}
{{ include "queen.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that pick the release's resources; components add their own below. */}}
{{- define "queen.selectorLabels" -}}
app.kubernetes.io/name: {{ include "queen.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Labels that pick the broker pods, and nothing else of the release (not the bundled
PostgreSQL): the Deployment, both Services and the PodDisruptionBudget select with these.
*/}}
{{- define "queen.brokerSelectorLabels" -}}
{{ include "queen.selectorLabels" . }}
app.kubernetes.io/component: broker
{{- end }}

{{/* Name of the headless Service whose DNS name lists every broker pod. */}}
{{- define "queen.peersServiceName" -}}
{{- printf "%s-peers" (include "queen.fullname" .) }}
{{- end }}

{{/* Fully qualified DNS name of the peers Service (QUEEN_PEER_DNS). */}}
{{- define "queen.peerDns" -}}
{{- printf "%s.%s.svc.%s" (include "queen.peersServiceName" .) .Release.Namespace .Values.clusterDomain }}
{{- end }}

{{/* Name of the bundled PostgreSQL's StatefulSet and Service. */}}
{{- define "queen.postgresqlName" -}}
{{- printf "%s-postgresql" (include "queen.fullname" .) }}
{{- end }}

{{/* Image reference of the broker. */}}
{{- define "queen.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Name of the Secret holding the credentials: the user's, or the chart's own. */}}
{{- define "queen.secretName" -}}
{{- default (include "queen.fullname" .) .Values.existingSecret.name }}
{{- end }}

{{/* Whether the chart creates its own Secret. */}}
{{- define "queen.createSecret" -}}
{{- if not .Values.existingSecret.name }}true{{ end }}
{{- end }}

{{/*
Keys in that Secret. The chart's own Secret uses fixed names; an existing Secret uses the
names given in existingSecret.keys.
*/}}
{{- define "queen.passwordKey" -}}
{{- if .Values.existingSecret.name }}{{ .Values.existingSecret.keys.databasePassword }}{{ else }}database-password{{ end }}
{{- end }}
{{- define "queen.meshSecretKey" -}}
{{- if .Values.existingSecret.name }}{{ .Values.existingSecret.keys.meshSecret }}{{ else }}mesh-secret{{ end }}
{{- end }}
{{- define "queen.urlKey" -}}
{{- if .Values.existingSecret.name }}{{ .Values.existingSecret.keys.databaseUrl }}{{ else if .Values.database.url }}database-url{{ end }}
{{- end }}

{{/* Whether the brokers take DATABASE_URL from the Secret rather than the PG_* settings. */}}
{{- define "queen.usesUrl" -}}
{{- if include "queen.urlKey" . }}true{{ end }}
{{- end }}

{{/* Database host and port the brokers use with PG_*: the bundled server or database.host. */}}
{{- define "queen.databaseHost" -}}
{{- if .Values.postgresql.enabled }}{{ include "queen.postgresqlName" . }}{{ else }}{{ .Values.database.host }}{{ end }}
{{- end }}
{{- define "queen.databasePort" -}}
{{- if .Values.postgresql.enabled }}5432{{ else }}{{ .Values.database.port }}{{ end }}
{{- end }}

{{/*
A value of the chart's Secret that the chart generates: the one already stored in the
release's Secret if there is one (so upgrades keep it), else a new random one. `lookup`
answers nothing under `helm template`, which then shows a fresh value each time.
Call with (list $ "key").
*/}}
{{- define "queen.generatedSecretValue" -}}
{{- $root := index . 0 }}
{{- $key := index . 1 }}
{{- $existing := lookup "v1" "Secret" $root.Release.Namespace (include "queen.fullname" $root) }}
{{- if and $existing $existing.data (hasKey $existing.data $key) }}
{{- index $existing.data $key | b64dec }}
{{- else }}
{{- randAlphaNum 40 }}
{{- end }}
{{- end }}

{{/*
Refuses values that would render a broken release. Above all, a broker with no database
settings starts an embedded PostgreSQL inside its pod, which is never wanted here.
*/}}
{{- define "queen.validate" -}}
{{- $v := .Values }}
{{- $existingUrl := and $v.existingSecret.name $v.existingSecret.keys.databaseUrl }}
{{- if and $v.postgresql.enabled (or $v.database.url $existingUrl) }}
{{- fail "postgresql.enabled runs a bundled server: leave database.url and existingSecret.keys.databaseUrl empty" }}
{{- end }}
{{- if and $v.existingSecret.name $v.database.url }}
{{- fail "with existingSecret.name the connection string comes from that Secret: put it under a key and name it in existingSecret.keys.databaseUrl instead of database.url" }}
{{- end }}
{{- if not (or $v.database.url $existingUrl $v.postgresql.enabled $v.database.host) }}
{{- fail "no database: set database.host, database.url, existingSecret.keys.databaseUrl or postgresql.enabled (without one the broker would start an embedded PostgreSQL in each pod)" }}
{{- end }}
{{- if not (has $v.logging.format (list "text" "json")) }}
{{- fail (printf "logging.format must be text or json, not %q" $v.logging.format) }}
{{- end }}
{{- if not (has $v.termination.preStopAction (list "exec" "sleep")) }}
{{- fail (printf "termination.preStopAction must be exec or sleep, not %q" $v.termination.preStopAction) }}
{{- end }}
{{- end }}
