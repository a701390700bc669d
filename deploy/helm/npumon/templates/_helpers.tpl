{{/* The chart name, or nameOverride. */}}
{{- define "npumon.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object names: the release name, with the chart name appended unless it already holds it. */}}
{{- define "npumon.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "npumon.selectorLabels" -}}
app.kubernetes.io/name: {{ include "npumon.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "npumon.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "npumon.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: exporter
{{- end }}

{{- define "npumon.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "npumon.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Whether the chart renders the web config Secret itself (TLS or basic auth from values). */}}
{{- define "npumon.webConfigGenerated" -}}
{{- if and (not .Values.web.existingSecret) (or .Values.web.tls.enabled .Values.web.basicAuthUsers .Values.web.headers) }}true{{ end }}
{{- end }}

{{/* The Secret whose web-config.yml npumon reads, or nothing when it serves plain HTTP. */}}
{{- define "npumon.webConfigSecret" -}}
{{- if .Values.web.existingSecret }}{{ .Values.web.existingSecret }}
{{- else if include "npumon.webConfigGenerated" . }}{{ include "npumon.fullname" . }}-web-config
{{- end }}
{{- end }}

{{/* The exporter-toolkit web-config.yml made from web.tls, web.basicAuthUsers, web.headers. */}}
{{- define "npumon.webConfig" -}}
{{- $config := dict }}
{{- if .Values.web.tls.enabled }}
{{- if not .Values.web.tls.secretName }}
{{- fail "web.tls.enabled needs web.tls.secretName (a kubernetes.io/tls Secret) or web.existingSecret" }}
{{- end }}
{{- $tls := dict "cert_file" "/etc/npumon-tls/tls.crt" "key_file" "/etc/npumon-tls/tls.key" "min_version" .Values.web.tls.minVersion "client_auth_type" .Values.web.tls.clientAuthType }}
{{- if ne .Values.web.tls.clientAuthType "NoClientCert" }}
{{- $_ := set $tls "client_ca_file" "/etc/npumon-tls/ca.crt" }}
{{- end }}
{{- $_ := set $config "tls_server_config" $tls }}
{{- end }}
{{- if .Values.web.basicAuthUsers }}
{{- $_ := set $config "basic_auth_users" .Values.web.basicAuthUsers }}
{{- end }}
{{- if .Values.web.headers }}
{{- $_ := set $config "http_server_config" (dict "headers" .Values.web.headers) }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/* HTTPS when TLS is on. */}}
{{- define "npumon.scheme" -}}
{{- if .Values.web.tls.enabled }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/* The probe handler: /-/healthy needs no auth; a TCP check when a client certificate is
     required, since the kubelet has none to present. */}}
{{- define "npumon.probeHandler" -}}
{{- if and .Values.web.tls.enabled (eq .Values.web.tls.clientAuthType "RequireAndVerifyClientCert") }}
tcpSocket:
  port: metrics
{{- else }}
httpGet:
  path: /-/healthy
  port: metrics
  scheme: {{ include "npumon.scheme" . }}
{{- end }}
{{- end }}
