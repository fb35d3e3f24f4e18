{{- /*
The broker pod, shared by the Deployment (deployment.yaml) and the StatefulSet
(statefulset.yaml) that runs it when the push spool keeps a volume claim per pod.
*/ -}}
{{- define "queen.brokerPod" -}}
metadata:
  labels:
    {{- include "queen.labels" . | nindent 4 }}
    app.kubernetes.io/component: broker
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    # Settings reach the broker only at start: a changed ConfigMap or Secret rolls the pods.
    checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
    {{- if include "queen.createSecret" . }}
    # Over the values, not the rendered Secret: generated values are kept across
    # upgrades, but `helm template` shows new ones on every render.
    checksum/secret: {{ list .Values.database .Values.mesh.secret | toJson | sha256sum }}
    {{- end }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  # The broker never calls the Kubernetes API: peers come from DNS.
  automountServiceAccountToken: false
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  terminationGracePeriodSeconds: {{ .Values.termination.gracePeriodSeconds }}
  {{- if .Values.postgresql.enabled }}
  initContainers:
    # The bundled server may still be starting; the broker applies its schema at start
    # and would exit (and back off) without a database.
    - name: wait-for-postgresql
      image: "{{ .Values.postgresql.image.repository }}:{{ .Values.postgresql.image.tag }}"
      imagePullPolicy: {{ .Values.postgresql.image.pullPolicy }}
      command:
        - sh
        - -c
        - until pg_isready -q -h "$PG_HOST" -p "$PG_PORT"; do sleep 1; done
      env:
        - name: PG_HOST
          value: {{ include "queen.postgresqlName" . | quote }}
        - name: PG_PORT
          value: "5432"
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
  {{- end }}
  containers:
    - name: queen
      image: {{ include "queen.image" . | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      ports:
        - name: http
          containerPort: {{ .Values.http.port }}
          protocol: TCP
        - name: mesh
          containerPort: {{ .Values.mesh.port }}
          protocol: TCP
      envFrom:
        - configMapRef:
            name: {{ include "queen.fullname" . }}
      env:
        # Each pod's name is unique among live pods and shows up in logs and metrics.
        - name: QUEEN_NODE_ID
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        # The push spool (README, "The push spool"): on the pod's own volume claim with
        # spool.persistence (a pod deleted or moved during an outage comes back to
        # what it buffered), else on the pod's emptyDir (the root file system is
        # read-only), which keeps it across a container restart only.
        - name: FILE_BUFFER_DIR
          value: {{ include "queen.spoolDir" . }}
        {{- if include "queen.usesUrl" . }}
        - name: DATABASE_URL
          valueFrom:
            secretKeyRef:
              name: {{ include "queen.secretName" . }}
              key: {{ include "queen.urlKey" . }}
        {{- else }}
        - name: PG_PASSWORD
          valueFrom:
            secretKeyRef:
              name: {{ include "queen.secretName" . }}
              key: {{ include "queen.passwordKey" . }}
        {{- end }}
        - name: QUEEN_MESH_SECRET
          valueFrom:
            secretKeyRef:
              name: {{ include "queen.secretName" . }}
              key: {{ include "queen.meshSecretKey" . }}
        {{- if .Values.auth.jwt.enabled }}
        {{- $jwtSecret := .Values.auth.jwt.existingSecret | default (include "queen.secretName" .) }}
        # Optional keys: an HS256 deployment has no public key, an RS256 one no secret.
        - name: JWT_SECRET
          valueFrom:
            secretKeyRef:
              name: {{ $jwtSecret }}
              key: {{ .Values.auth.jwt.secretKeys.secret }}
              optional: true
        - name: JWT_PUBLIC_KEY
          valueFrom:
            secretKeyRef:
              name: {{ $jwtSecret }}
              key: {{ .Values.auth.jwt.secretKeys.publicKey }}
              optional: true
        {{- end }}
        {{- with .Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      startupProbe:
        httpGet:
          path: {{ .Values.probes.startup.path }}
          port: http
        periodSeconds: {{ .Values.probes.startup.periodSeconds }}
        timeoutSeconds: {{ .Values.probes.startup.timeoutSeconds }}
        failureThreshold: {{ .Values.probes.startup.failureThreshold }}
      livenessProbe:
        httpGet:
          path: {{ .Values.probes.liveness.path }}
          port: http
        periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
        timeoutSeconds: {{ .Values.probes.liveness.timeoutSeconds }}
        failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
      readinessProbe:
        httpGet:
          path: {{ .Values.probes.readiness.path }}
          port: http
        periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
        timeoutSeconds: {{ .Values.probes.readiness.timeoutSeconds }}
        failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
        successThreshold: {{ .Values.probes.readiness.successThreshold }}
      lifecycle:
        # Pod removal and endpoint removal race: sleep first so no new request reaches
        # a broker that has already begun to drain.
        preStop:
          {{- if eq .Values.termination.preStopAction "sleep" }}
          sleep:
            seconds: {{ .Values.termination.preStopSleepSeconds }}
          {{- else }}
          exec:
            command: ["sleep", {{ .Values.termination.preStopSleepSeconds | quote }}]
          {{- end }}
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
        {{- if .Values.spool.persistence.enabled }}
        - name: spool
          mountPath: {{ include "queen.spoolDir" . }}
        {{- end }}
  volumes:
    # The root file system is read-only; anything transient goes here, and the push
    # spool without spool.persistence, which then lives as long as the pod.
    - name: tmp
      emptyDir: {}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{- /* Where the push spool lives in the broker container. */ -}}
{{- define "queen.spoolDir" -}}
{{- if .Values.spool.persistence.enabled }}/var/lib/queen/spool{{ else }}/tmp/queen-spool{{ end }}
{{- end }}
