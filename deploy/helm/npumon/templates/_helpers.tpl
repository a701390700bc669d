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

{{/* The namespace of every namespaced object: namespaceOverride, else the release's (for
     umbrella charts that install into another namespace). */}}
{{- define "npumon.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "npumon.selectorLabels" -}}
app.kubernetes.io/name: {{ include "npumon.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels of every object: the chart's own, then commonLabels. */}}
{{- define "npumon.labels" -}}
{{- include "npumon.labelsWith" (list .) }}
{{- end }}

{{/* The chart's own labels, then the object's labels given after the context, then
     commonLabels: (list . $extra ...). Where two name the same key the earlier wins, so no
     value can change the selector labels. */}}
{{- define "npumon.labelsWith" -}}
{{- $ctx := first . }}
{{- $own := dict "helm.sh/chart" (printf "%s-%s" $ctx.Chart.Name $ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-") "app.kubernetes.io/version" $ctx.Chart.AppVersion "app.kubernetes.io/managed-by" $ctx.Release.Service "app.kubernetes.io/component" "exporter" }}
{{- $labels := merge (include "npumon.selectorLabels" $ctx | fromYaml) $own }}
{{- range rest . }}
{{- $labels = merge $labels (. | default dict) }}
{{- end }}
{{- toYaml (merge $labels ($ctx.Values.commonLabels | default dict)) }}
{{- end }}

{{/* The image reference: [registry/]repository, then @digest, or else :tag (default the
     chart's appVersion); the registry is image.registry, else global.imageRegistry. With
     config.profiling.enabled, the profiling variant: profilingDigest, or the tag plus
     profilingTagSuffix. */}}
{{- define "npumon.image" -}}
{{- $image := .Values.image }}
{{- $name := $image.repository }}
{{- $profiling := include "npumon.profiling" . }}
{{- with $image.registry | default ((.Values.global | default dict).imageRegistry) }}{{ $name = printf "%s/%s" (trimSuffix "/" .) $name }}{{ end }}
{{- if and $image.digest $profiling }}{{ printf "%s@%s" $name (required "image.profilingDigest: the profiling variant's digest, since image.digest pins the default image and config.profiling.enabled needs the profiling one" $image.profilingDigest) }}
{{- else if $image.digest }}{{ printf "%s@%s" $name $image.digest }}
{{- else if $profiling }}{{ printf "%s:%s%s" $name ($image.tag | default .Chart.AppVersion) ($image.profilingTagSuffix | default "") }}
{{- else }}{{ printf "%s:%s" $name ($image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* "true" when npumon's profiling captures are on (config.profiling.enabled): the pods then run
     the profiling image variant and, under deviceAccess ascendRuntime, get the capabilities
     discovery, msprof attach and ingest need. */}}
{{- define "npumon.profiling" -}}
{{- if dig "profiling" "enabled" false (.Values.config | default dict) }}true{{ end }}
{{- end }}

{{/* "true" under deviceAccess ascendRuntime: the Ascend Docker Runtime puts the devices named
     in ASCEND_VISIBLE_DEVICES into the container, which is not privileged. */}}
{{- define "npumon.ascendRuntime" -}}
{{- if eq (.Values.deviceAccess | default "privileged") "ascendRuntime" }}true{{ end }}
{{- end }}

{{/* The container's securityContext: deviceAccess's own (docs/privileges.md), then the keys of
     the securityContext value over it, as Helm merges values: a map is merged into the map it
     meets, anything else replaces, and null removes the key. Under ascendRuntime: every
     capability dropped but DAC_OVERRIDE (the HwHiAiUser-owned devices, the state directory),
     plus DAC_READ_SEARCH and SYS_PTRACE with profiling; root for the kubelet's root-only
     pod-resources socket. */}}
{{- define "npumon.securityContext" -}}
{{- $context := dict "privileged" true "runAsUser" 0 "readOnlyRootFilesystem" true }}
{{- if include "npumon.ascendRuntime" . }}
{{- $add := list "DAC_OVERRIDE" }}
{{- if include "npumon.profiling" . }}{{ $add = concat $add (list "DAC_READ_SEARCH" "SYS_PTRACE") }}{{ end }}
{{- $context = dict "privileged" false "allowPrivilegeEscalation" false "capabilities" (dict "drop" (list "ALL") "add" $add) "runAsUser" 0 "readOnlyRootFilesystem" true }}
{{- end }}
{{- range $key, $value := .Values.securityContext | default dict }}
{{- if kindIs "invalid" $value }}{{ $_ := unset $context $key }}
{{- else if and (kindIs "map" $value) (kindIs "map" (get $context $key)) }}{{ $_ := mergeOverwrite (get $context $key) $value }}
{{- else }}{{ $_ := set $context $key $value }}
{{- end }}
{{- end }}
{{- toYaml $context }}
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

{{/* The scrape endpoint of the ServiceMonitor and the PodMonitor: (list . $monitor), $monitor
     being .Values.serviceMonitor or .Values.podMonitor. instance = the node name, so alerts and
     dashboards name nodes, not pod IPs. */}}
{{- define "npumon.scrapeEndpoint" -}}
{{- $ctx := index . 0 }}
{{- $m := index . 1 }}
- port: metrics
  path: /metrics
  scheme: {{ include "npumon.scheme" $ctx | lower }}
  interval: {{ $m.interval }}
  scrapeTimeout: {{ $m.scrapeTimeout }}
  honorLabels: {{ $m.honorLabels }}
  {{- with $m.basicAuth }}
  basicAuth:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $m.tlsConfig }}
  tlsConfig:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  relabelings:
    - sourceLabels: [__meta_kubernetes_pod_node_name]
      targetLabel: instance
    {{- with $m.relabelings }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $m.metricRelabelings }}
  metricRelabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* The monitor's spec-level limits: a scrape with more samples (sampleLimit) fails whole, up
     = 0; targetLimit bounds the nodes. 0 or unset: no limit. */}}
{{- define "npumon.scrapeLimits" -}}
{{- with .sampleLimit }}
sampleLimit: {{ int64 . }}
{{- end }}
{{- with .targetLimit }}
targetLimit: {{ int64 . }}
{{- end }}
{{- end }}

{{/* The helm test pod's own name and instance labels (templates/tests/scrape.yaml), which the
     NetworkPolicy admits. Not the selector labels: the Service and the NetworkPolicy, whose
     egress is closed, would select the test pod too. */}}
{{- define "npumon.testSelectorLabels" -}}
app.kubernetes.io/name: {{ include "npumon.name" . }}-test
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "npumon.testLabels" -}}
{{- $own := dict "helm.sh/chart" (printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-") "app.kubernetes.io/managed-by" .Release.Service "app.kubernetes.io/component" "helm-test" }}
{{- toYaml (merge (include "npumon.testSelectorLabels" . | fromYaml) $own (.Values.commonLabels | default dict)) }}
{{- end }}
