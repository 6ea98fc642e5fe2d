// Generated from docs/openapi.yaml by scripts/sync-openapi; do not edit.
enum OpenAPIDocument {
    static let yaml = #"""
openapi: 3.1.0
info:
  title: Switchyard flagsd API
  version: "1"
  summary: Feature flags and plugin switches per namespace, audited changes, long-poll snapshot delivery.
  description: |
    The HTTP API of `flagsd`. Rollouts are integer basis points (0 to 10000) everywhere in this API.

    **Access.** Send a token as `Authorization: Bearer <token>`. Roles are nested: `client` (snapshots, changes, events)
    ⊂ `reporter` (events the crash guard trusts: a server-side crash pipeline) ⊂ `editor` (flags, kill switches, audit,
    crash guard proposals) ⊂ `admin` (namespaces, tokens); a `metrics` token reads `/metrics`
    only. A token may be limited to some namespaces, and a client token must be (client tokens ship inside apps,
    where anyone can read them); managing tokens needs an admin token that is not limited, and the last live one
    cannot be revoked. `/healthz`, `/readyz`, `/openapi.yaml`, the web console's files (`/console/`) and (unless
    flagsd runs with `--metrics-require-token`) `/metrics` are open. No response names the database (user, host,
    port, database, file) or quotes its own error text; flagsd's log does.

    **Errors.** Every error is an RFC 9457 `application/problem+json` document; 400s list every field at fault
    in `errors` (`path`, `message`).

    **Writes.** Every write may carry `If-Match: "<epoch>.<version>"` (the `ETag` of what you read) and is
    refused with 409 when the namespace has changed since; `X-Switchyard-Source` names the tool making the
    change (`api` by default, `cli`, `console`, `apply`); a `reason` is required where the namespace's reason
    policy says so (by default for kills). A write that changes nothing answers 200 with `changed: false` and
    takes no version.

    **OpenFeature.** `/ofrep/v1/...` is the OpenFeature Remote Evaluation Protocol (OFREP 0.3, the spec copied
    in docs/specs/ofrep): any OpenFeature SDK with an OFREP provider evaluates flags there. Those routes accept
    the token as `Authorization: Bearer` or `X-API-Key`, answer errors with OFREP bodies (`key`, `errorCode`,
    `errorDetails`) rather than problem+json, and may answer 429 when a token exceeds its request rate.
    docs/openfeature.md has the details.

    See docs/api.md for a walkthrough with curl.
servers:
  - url: http://127.0.0.1:8080
security:
  - bearer: []

paths:
  /healthz:
    get:
      operationId: health
      summary: The process answers.
      security: []
      responses:
        "200":
          description: Alive.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Status"}

  /readyz:
    get:
      operationId: ready
      summary: The database answers and flagsd is not shutting down.
      description: |
        200 with `status` `ready`, or `degraded` (with `database: unavailable` and a `detail` that never names the
        database) while the database does not answer but the snapshots held are served; 503 while shutting down.
      security: []
      responses:
        "200":
          description: Ready for traffic.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Status"}
        "503": {$ref: "#/components/responses/Problem"}

  /metrics:
    get:
      operationId: metrics
      summary: Prometheus metrics (text exposition format).
      description: |
        `flagsd_http_requests_total{method,route,status}`, `flagsd_http_request_duration_seconds{method,route}`,
        `flagsd_long_poll_waiters`, `flagsd_namespace_version{namespace}`, `flagsd_changes_total{namespace,source}`,
        `flagsd_change_commit_duration_seconds`, `flagsd_auth_failures_total{reason}`, `flagsd_long_poll_max_waiters`,
        `flagsd_long_poll_wakeups_total`, `flagsd_change_propagation_seconds`, `flagsd_changes_by_actor_total{namespace,actor}`,
        `flagsd_connections_open`, `flagsd_connections_max`, `flagsd_connections_refused_total`,
        `flagsd_connections_cut_total{reason}` (`header_timeout`, `idle_timeout`, `body_timeout`); docs/deploy.md lists
        them all. With `--metrics-require-token`, it needs a `metrics` token, or an editor's or admin's valid in
        every namespace (403 for any other, client tokens included).
      security: [{}, {bearer: []}]
      responses:
        "200":
          description: The metrics.
          content:
            text/plain:
              schema: {type: string}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}

  /openapi.yaml:
    get:
      operationId: openAPI
      summary: This document.
      security: []
      responses:
        "200":
          description: The OpenAPI document.
          content:
            application/yaml:
              schema: {type: string}

  /console:
    get:
      operationId: console
      summary: The web console (HTML). `/console` redirects to `/console/`, which serves the page.
      description: |
        Plain HTML, CSS and JavaScript (docs/console.md). Sign in with an editor or admin token, kept in the
        tab's session storage only. Sent with a Content-Security-Policy (scripts and styles from flagsd only,
        Trusted Types required, no framing), `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.
        Answers 404 when flagsd runs with `--no-console`.
      security: []
      responses:
        "200":
          description: "The console's page (`/console/`), revalidated on every load (`Cache-Control: no-cache`, `ETag`)."
          content:
            text/html:
              schema: {type: string}
        "301":
          description: "`/console` without the slash: `Location: console/`."
        "304":
          description: "`If-None-Match` names the page's current `ETag`."
        "404": {$ref: "#/components/responses/Problem"}

  /console/{asset}:
    get:
      operationId: consoleAsset
      summary: One of the console's files (JavaScript, CSS, icon).
      description: |
        With `?v=` naming the current version (as the page links them), cacheable for a year
        (`Cache-Control: public, max-age=31536000, immutable`); otherwise revalidated by `ETag`. gzip when accepted.
      security: []
      parameters:
        - name: asset
          in: path
          required: true
          description: A file name, e.g. `app.js`.
          schema: {type: string, pattern: "^[A-Za-z0-9_-][A-Za-z0-9._-]*$"}
        - name: v
          in: query
          required: false
          description: The console's version, as the page names it.
          schema: {type: string}
      responses:
        "200":
          description: The file, with its content type.
          content:
            text/javascript:
              schema: {type: string}
            text/css:
              schema: {type: string}
            image/svg+xml:
              schema: {type: string}
        "304":
          description: "`If-None-Match` names the file's current `ETag`."
        "404": {$ref: "#/components/responses/Problem"}

  /v1/namespaces:
    get:
      operationId: listNamespaces
      summary: The namespaces the token may use (editor).
      responses:
        "200":
          description: Namespaces by name.
          content:
            application/json:
              schema:
                type: object
                required: [namespaces]
                properties:
                  namespaces:
                    type: array
                    items: {$ref: "#/components/schemas/Namespace"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
    post:
      operationId: createNamespace
      summary: Create a namespace with a fresh epoch at version 1 (admin).
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: [name]
              properties:
                name: {type: string, description: "Letters, digits, '.', '_' and '-'; at most 63 characters."}
                description: {type: string}
                reason_policy: {$ref: "#/components/schemas/ReasonPolicy"}
                flag_set: {$ref: "#/components/schemas/FlagSet"}
                reason: {type: string}
      responses:
        "201":
          description: Created; `Location` names it, `ETag` is its version.
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
            Location: {schema: {type: string}}
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Namespace"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}:
    parameters:
      - $ref: "#/components/parameters/namespace"
    get:
      operationId: getNamespace
      summary: A namespace's epoch, version, reason policy and counts (editor).
      responses:
        "200":
          description: The namespace.
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Namespace"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
    patch:
      operationId: updateNamespace
      summary: Set the reason policy (admin).
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: [reason_policy]
              properties:
                reason_policy: {$ref: "#/components/schemas/ReasonPolicy"}
                reason: {type: string}
      responses:
        "200":
          description: The namespace after the update.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Namespace"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
    delete:
      operationId: deleteNamespace
      summary: Delete a namespace (admin). Its history stays in the audit log; waiting clients get 404.
      parameters:
        - {name: reason, in: query, schema: {type: string}}
      responses:
        "204": {description: Deleted.}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/snapshot:
    parameters:
      - $ref: "#/components/parameters/namespace"
    get:
      operationId: getSnapshot
      summary: The namespace's snapshot, or what changed since a version; a conditional GET, or a long-poll with `wait` (client).
      description: |
        The `ETag` is `"<epoch>.<version>"`; `If-None-Match` compares weakly. Without `wait`, a matching tag gets
        304. With `wait` and a tag naming the current epoch at or above the current version, the request is held
        until the namespace passes that version (200 with the new snapshot) or the wait ends (304). A tag of
        another epoch, an older version or an unparsable tag gets 200 at once. Past the server's waiter cap: 503
        with `Retry-After`. With `Accept-Encoding: gzip` the body is gzip (same `ETag`).

        Deltas: with `Accept` naming `application/vnd.switchyard.snapshot-delta+json`, a 200 to a request whose
        `If-None-Match` names an older version of the current epoch is the delta from that version (what changed,
        with the checksum and digest of the snapshot it leads to) when the server keeps one and it is smaller than
        the snapshot; otherwise the snapshot, as for a request that does not ask (every client that does not name
        the type gets full snapshots). Tell them apart by `Content-Type`. The choice of a media type over a query
        parameter, the delta document and how to apply and check it: docs/snapshot.md, "Deltas".
      parameters:
        - $ref: "#/components/parameters/wait"
        - {name: If-None-Match, in: header, schema: {type: string}}
        - {name: Accept-Encoding, in: header, schema: {type: string}}
        - name: Accept
          in: header
          description: "Name `application/vnd.switchyard.snapshot-delta+json` (with a quality above 0) to accept deltas."
          schema: {type: string}
      responses:
        "200":
          description: The snapshot, or (when asked for and available) the delta to it from the version in `If-None-Match`.
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
            Vary: {schema: {type: string, const: "Accept, Accept-Encoding"}}
            Content-Encoding: {schema: {type: string, const: gzip}}
            Cache-Control:
              description: "`no-cache` for a snapshot; `no-store` for a delta (it suits only requests from its base version)."
              schema: {type: string, enum: [no-cache, no-store]}
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Snapshot"}
            application/vnd.switchyard.snapshot-delta+json:
              schema: {$ref: "#/components/schemas/SnapshotDelta"}
        "304":
          description: Not modified (or the wait ended without a change).
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "429": {$ref: "#/components/responses/TooManyRequests"}
        "503": {$ref: "#/components/responses/Overloaded"}

  /v1/namespaces/{namespace}/changes:
    parameters:
      - $ref: "#/components/parameters/namespace"
    get:
      operationId: listChanges
      summary: The change log after a version, oldest first; long-polls with `wait` (client).
      description: |
        With `wait`, when the namespace is not past `after`, the request is held until it is (or the wait
        ends: 200 with no changes). Follow the feed by passing `next_after` as the next `after`. A new `epoch`
        means the namespace was deleted and created again: start over from `after=0`.
      parameters:
        - {name: after, in: query, schema: {type: integer, minimum: 0, default: 0}}
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 1000, default: 100}}
        - $ref: "#/components/parameters/wait"
      responses:
        "200":
          description: Changes after `after`.
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
          content:
            application/json:
              schema:
                type: object
                required: [namespace, epoch, version, changes, next_after]
                properties:
                  namespace: {type: string}
                  epoch: {type: string}
                  version: {type: integer, description: The current version.}
                  changes:
                    type: array
                    items: {$ref: "#/components/schemas/Change"}
                  next_after: {type: integer}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "429": {$ref: "#/components/responses/TooManyRequests"}
        "503": {$ref: "#/components/responses/Overloaded"}

  /v1/namespaces/{namespace}/changes/{version}:
    parameters:
      - $ref: "#/components/parameters/namespace"
      - $ref: "#/components/parameters/version"
    get:
      operationId: getChange
      summary: One change log entry (client).
      responses:
        "200":
          description: The change.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Change"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/changes/{version}/revert:
    parameters:
      - $ref: "#/components/parameters/namespace"
      - $ref: "#/components/parameters/version"
    post:
      operationId: revertChange
      summary: Restore what a change touched to its state before it, as a new change (editor).
      parameters:
        - $ref: "#/components/parameters/ifMatch"
        - $ref: "#/components/parameters/source"
      requestBody:
        $ref: "#/components/requestBodies/ReasonOnly"
      responses:
        "200": {$ref: "#/components/responses/Committed"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/events:
    parameters:
      - $ref: "#/components/parameters/namespace"
    post:
      operationId: postEvents
      summary: A batch of client events, sessions and exposures, counted for the crash guard and experiment results (client).
      description: |
        Each event is checked on its own: valid events are counted (once per id: a retried batch never counts
        twice) before the answer, durably, and listed in `accepted` with the ids counted before;
        invalid ones are listed in `rejected` with the reason, naming the field. Only a body that is not
        `{"events": [...]}` is a 400, and more than 1,000 events (`maximumEventsPerBatch`) a 413. Times more than
        10 minutes in the future or more than 7 days old are rejected per event; ids are remembered 8 days.
        Members this server does not know are ignored. Counters: per minute (UTC), per source (clients,
        reporters), per plugin switch, variant and the namespace-wide baseline, for all units, per city and per
        cohort.

        Client tokens are public, so what they send is bounded (docs/crash-guard.md, "Threat model"): accepted
        events that name a plugin switch, experiment flag or variant the namespace does not have are not counted;
        of the sessions of one window (the namespace's crash guard window, 10 minutes by default), a unit counts at
        most `max_sessions_per_unit` and a source address at most `max_sessions_per_address`; the rest are
        acknowledged but left out of the counts, and listed in `dropped` with the reason. Cities and cohorts the
        namespace does not declare (`crash_guard.cities`, `cohorts`), or that are not among the most frequent of
        the window, are counted as `(other)`. The source address is the TCP peer, or behind a `--trusted-proxies`
        peer the first untrusted address of `Forwarded` or `X-Forwarded-For`. Events posted with a reporter token
        (or a higher role) are the reporter's: counted apart, not capped per address, and their sessions must name
        their `unit`.

        Batches are counted one at a time, in small transactions, so that flag changes never wait behind events.
        A batch is refused with 429 and `Retry-After`, nothing of it counted, when its token or (for client tokens)
        its source address has posted its events per minute, or when the events waiting to be counted fill the
        backlog; the client keeps it and sends it again.
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [events]
              properties:
                events:
                  type: array
                  maxItems: 1000
                  items:
                    type: object
                    required: [id, type, time]
                    properties:
                      id: {type: string, maxLength: 128, description: Client-generated and unique; the session id for a session.}
                      type: {type: string, enum: [session, exposure]}
                      time: {type: string, format: date-time, description: When the client queued the event (RFC 3339); decides the minute it counts in.}
                      app_version: {type: string}
                      platform: {type: string}
                      city: {type: string}
                      cohorts: {type: array, maxItems: 32, items: {type: string}}
                      unit:
                        type: string
                        maxLength: 128
                        description: |
                          session: the unit the session ran for, opaque to flagsd, which keeps only a digest of it. The
                          client runtime sends a digest of its unit id, never the id. Required in a reporter's sessions;
                          a client's session without one counts as its source address's single unit.
                      session_id: {type: string, description: "session: required."}
                      start: {type: string, format: date-time, description: "session: required."}
                      end: {type: string, format: date-time, description: "session: required, not before start."}
                      crashed: {type: boolean, description: "session: required; true after an unclean exit."}
                      switches:
                        type: array
                        maxItems: 256
                        items: {type: string}
                        description: "session: required; the plugin switches active in the session."
                      variants:
                        type: object
                        additionalProperties: {type: string}
                        description: "session: the variant of each experiment flag served in the session."
                      flag: {type: string, description: "exposure: required."}
                      variant: {type: string, description: "exposure: required."}
                      epoch: {type: string}
                      version: {type: integer, minimum: 1}
            example:
              events:
                - {id: 0b7e5a8e-5b1c-4d0e-9f3a-6f1c2d3e4a5b, type: session, time: "2026-11-22T09:20:40.118Z", city: lagos,
                   cohorts: [beta], session_id: 0b7e5a8e-5b1c-4d0e-9f3a-6f1c2d3e4a5b, start: "2026-11-22T09:02:11.004Z",
                   end: "2026-11-22T09:14:03.250Z", crashed: true, switches: [plugin_switch_feed_promos],
                   unit: 4be0643f1d98573b97cdca98a65347dd, variants: {confirmation_button_copy: book_now}}
      responses:
        "200":
          description: What was counted and what was refused.
          content:
            application/json:
              schema:
                type: object
                required: [accepted, rejected, duplicates]
                properties:
                  accepted:
                    type: array
                    items: {type: string}
                    description: Every id acknowledged, counted now or before; the client drops them from its queue.
                  rejected:
                    type: array
                    items:
                      type: object
                      required: [index, reason]
                      properties:
                        id: {type: [string, "null"], description: The event's id; null when it has no usable one.}
                        index: {type: integer, description: The event's position in the batch.}
                        reason: {type: string, description: "What is wrong, naming the field, e.g. `time: ... is 3 days in the future ...`."}
                  duplicates:
                    type: array
                    items: {type: string}
                    description: The accepted ids that had been counted before (a retried batch); nothing was added for them.
                  dropped:
                    type: array
                    description: The accepted ids left out of the counts, and why.
                    items:
                      type: object
                      required: [id, reason]
                      properties:
                        id: {type: string}
                        reason: {type: string, enum: [unknown_switch, unknown_flag, unknown_variant, unit_cap, address_cap]}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "413": {$ref: "#/components/responses/Problem"}
        "429": {$ref: "#/components/responses/TooManyRequests"}
        "503": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/guard:
    parameters:
      - $ref: "#/components/parameters/namespace"
    get:
      operationId: getGuardStatus
      summary: Every plugin switch as the crash guard sees it now (editor).
      description: |
        Per plugin switch, over its policy's window (from the later of the window's start and the last time a
        person re-enabled it): sessions with the switch active, crashed sessions, the crash rate, its one-sided
        Wilson lower bound at the policy's confidence, the bound it must exceed (`max_crash_rate`, or
        `baseline_ratio` times the crash rate of sessions without the switch), what keeps it from tripping, the
        cities and cohorts above the bound, the trips in force and the state: `watching`, `tripping` (the store's
        counts trip it; the guard is committing), `tripped` (off by the guard until a person enables it),
        `proposed` (past its budget, the guard proposes disabling it: a person decides), `disabled` (off by a
        person), `cooling_down` (re-enabled; the guard waits), `off` (the policy turns the guard off). The counts
        are those of the source shown (`source`: the one that trips, else the allowed one with the most sessions);
        `sources` has each source's. Also the namespace's trip budget and the open proposals. Rates are fractions
        (0.0497), the policy's percentages basis points. See docs/crash-guard.md.
      parameters:
        - {name: switch, in: query, schema: {type: string}, description: Only this plugin switch.}
      responses:
        "200":
          description: The guard's view of the namespace.
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
          content:
            application/json:
              schema:
                type: object
                required: [namespace, version, time, rule, budget, proposals, switches]
                properties:
                  namespace: {type: string}
                  version: {type: integer}
                  time: {type: string, format: date-time}
                  rule: {type: string, enum: [wilson-lower-bound]}
                  budget:
                    type: object
                    required: [max_trips_per_hour, trips_last_hour, remaining]
                    description: The guard's own disables in the last hour, against the namespace's max_trips_per_hour.
                    properties:
                      max_trips_per_hour: {type: integer}
                      trips_last_hour: {type: integer}
                      remaining: {type: integer}
                  proposals:
                    type: array
                    description: The open proposals (of the switch, with `switch`).
                    items: {$ref: "#/components/schemas/GuardProposal"}
                  switches:
                    type: array
                    items: {$ref: "#/components/schemas/GuardSwitchStatus"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "503": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/guard/trips:
    parameters:
      - $ref: "#/components/parameters/namespace"
    get:
      operationId: getGuardTrips
      summary: The crash guard's trips, newest first, with their evidence (editor).
      description: |
        Every change the crash guard made in the last 8 days (the audit log keeps all of them: `GET
        /v1/audit?source=crash-guard`), with its evidence, whether it is still in force, and who turned the switch
        back on and when.
      parameters:
        - {name: switch, in: query, schema: {type: string}, description: Only this plugin switch.}
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 1000, default: 50}}
      responses:
        "200":
          description: The trips.
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
          content:
            application/json:
              schema:
                type: object
                required: [namespace, version, trips]
                properties:
                  namespace: {type: string}
                  version: {type: integer}
                  trips:
                    type: array
                    items: {$ref: "#/components/schemas/GuardTrip"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "503": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/guard/proposals:
    parameters:
      - $ref: "#/components/parameters/namespace"
    get:
      operationId: getGuardProposals
      summary: The disables the crash guard proposed past its budget, newest first (editor).
      description: |
        Past the namespace's trip budget (`max_trips_per_hour`), or past a switch's `max_scoped_disables`, the guard
        proposes a disable instead of making it. Each proposal of the last 8 days, with its evidence and what became
        of it: `open` (waiting for a person), `applied`, `dismissed`, `superseded` (the switch is off in that scope
        some other way, or was deleted).
      parameters:
        - {name: state, in: query, schema: {type: string, enum: [all, open, applied, dismissed, superseded], default: all}}
        - {name: switch, in: query, schema: {type: string}, description: Only this plugin switch.}
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 1000, default: 50}}
      responses:
        "200":
          description: The proposals.
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
          content:
            application/json:
              schema:
                type: object
                required: [namespace, version, proposals]
                properties:
                  namespace: {type: string}
                  version: {type: integer}
                  proposals:
                    type: array
                    items: {$ref: "#/components/schemas/GuardProposal"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "503": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/guard/proposals/{id}/apply:
    parameters:
      - $ref: "#/components/parameters/namespace"
      - {name: id, in: path, required: true, schema: {type: integer, minimum: 1}, description: The proposal's id.}
    post:
      operationId: applyGuardProposal
      summary: Disables a proposal's switch in its scope, as the caller's change (editor).
      description: |
        The change is the caller's (actor: the token's name) with source `crash-guard` and the proposal's evidence
        (and its id, `evidence.proposal`); the guard then treats it as one of its trips (it stays off until a
        person enables it, then the cool-down). Every open proposal of the same switch and scope is settled with it.
        A switch already off there answers 200 with `changed: false`; a dismissed proposal 409.
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                reason: {type: string, description: "Why (default: `applied crash guard proposal <id>`)."}
      responses:
        "200":
          description: The change, and the proposal.
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
          content:
            application/json:
              schema:
                allOf:
                  - {$ref: "#/components/schemas/Committed"}
                  - type: object
                    properties:
                      proposal: {$ref: "#/components/schemas/GuardProposal"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}
        "503": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/guard/proposals/{id}/dismiss:
    parameters:
      - $ref: "#/components/parameters/namespace"
      - {name: id, in: path, required: true, schema: {type: integer, minimum: 1}, description: The proposal's id.}
    post:
      operationId: dismissGuardProposal
      summary: Dismisses a proposal; the guard leaves its switch and scope alone for the cool-down (editor).
      description: |
        Recorded in the audit log (action `guard.dismiss`) with the reason, which is required. Every open proposal of
        the same switch and scope is dismissed with it. Dismissing a dismissed proposal again changes nothing; an
        applied or superseded one is a 409.
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [reason]
              properties:
                reason: {type: string}
      responses:
        "200":
          description: The proposal.
          content:
            application/json:
              schema:
                type: object
                required: [namespace, dismissed, proposal, audit_id]
                properties:
                  namespace: {type: string}
                  dismissed: {type: boolean, description: False when it was dismissed already.}
                  proposal: {$ref: "#/components/schemas/GuardProposal"}
                  audit_id: {type: [integer, "null"]}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}
        "503": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/experiments/{key}:
    parameters:
      - $ref: "#/components/parameters/namespace"
      - {name: key, in: path, required: true, schema: {type: string}, description: An experiment flag.}
    get:
      operationId: getExperimentResults
      summary: Exposures, sessions and crash rate per variant of an experiment flag, against the control (editor).
      description: |
        Counts over the window from the `exposure` events and the variants named by `session` events. For each
        variant but the control: the difference of its crash rate to the control's, with Newcombe's hybrid score
        interval (method 10, built from the two Wilson intervals) at 95 % confidence; `significant` when the
        interval excludes 0. The control is the variant named `control`, else the flag's default variant.
      parameters:
        - {name: window, in: query, schema: {type: string, default: 1d}, description: "How far back: 1m to 30d (30m, 24h, 7d)."}
        - {name: control, in: query, schema: {type: string}, description: The variant to compare with.}
      responses:
        "200":
          description: The results.
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
          content:
            application/json:
              schema:
                type: object
                required: [namespace, flag, window, from, until, control, interval, confidence, variants]
                properties:
                  namespace: {type: string}
                  flag: {type: string}
                  window: {type: string}
                  from: {type: string, format: date-time}
                  until: {type: string, format: date-time}
                  control: {type: string}
                  interval: {type: string, enum: [newcombe-hybrid-score]}
                  confidence: {type: number}
                  variants:
                    type: array
                    items:
                      type: object
                      required: [variant, declared, control, exposures, sessions, crashes, crash_rate, difference]
                      properties:
                        variant: {type: string}
                        declared: {type: boolean, description: False for a variant clients reported that the flag no longer declares.}
                        control: {type: boolean}
                        exposures: {type: integer}
                        sessions: {type: integer}
                        crashes: {type: integer}
                        crash_rate: {type: [number, "null"]}
                        difference:
                          oneOf:
                            - type: object
                              required: [estimate, lower, upper, significant]
                              properties:
                                estimate: {type: number, description: This variant's crash rate minus the control's.}
                                lower: {type: number}
                                upper: {type: number}
                                significant: {type: boolean}
                            - {type: "null"}
              example:
                namespace: rider
                flag: confirmation_button_copy
                window: 1d
                from: "2026-11-23T09:00:00.000Z"
                until: "2026-11-24T09:00:00.000Z"
                control: control
                interval: newcombe-hybrid-score
                confidence: 0.95
                variants:
                  - {variant: control, declared: true, control: true, exposures: 5120, sessions: 4980, crashes: 21, crash_rate: 0.00422, difference: null}
                  - {variant: book_now, declared: true, control: false, exposures: 5034, sessions: 4902, crashes: 48, crash_rate: 0.00979,
                     difference: {estimate: 0.00557, lower: 0.00243, upper: 0.00889, significant: true}}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "503": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/flag-set:
    parameters:
      - $ref: "#/components/parameters/namespace"
    get:
      operationId: getFlagSet
      summary: The whole flag set document (editor).
      responses:
        "200":
          description: The flag set with its version.
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
          content:
            application/json:
              schema:
                type: object
                required: [version, etag, flag_set]
                properties:
                  version: {type: integer}
                  etag: {type: string}
                  flag_set: {$ref: "#/components/schemas/FlagSet"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
    put:
      operationId: putFlagSet
      summary: Replace every definition in one change (editor); what `flagctl apply` uses.
      parameters:
        - $ref: "#/components/parameters/ifMatch"
        - $ref: "#/components/parameters/source"
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: [flag_set]
              properties:
                flag_set: {$ref: "#/components/schemas/FlagSet"}
                reason: {type: string}
      responses:
        "200": {$ref: "#/components/responses/Committed"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/flags:
    parameters:
      - $ref: "#/components/parameters/namespace"
    get:
      operationId: listFlags
      summary: Every flag with its definition, covering kill switches and plugin point (editor).
      responses:
        "200":
          description: The flags.
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
          content:
            application/json:
              schema:
                type: object
                required: [namespace, version, flags]
                properties:
                  namespace: {type: string}
                  version: {type: integer}
                  flags:
                    type: array
                    items: {$ref: "#/components/schemas/Flag"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
    post:
      operationId: createFlag
      summary: Create a flag; 409 when the key exists (editor).
      parameters:
        - $ref: "#/components/parameters/ifMatch"
        - $ref: "#/components/parameters/source"
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: [key, flag]
              properties:
                key: {type: string}
                flag: {$ref: "#/components/schemas/FlagDefinition"}
                reason: {type: string}
      responses:
        "201": {$ref: "#/components/responses/Committed"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/flags/{key}:
    parameters:
      - $ref: "#/components/parameters/namespace"
      - $ref: "#/components/parameters/key"
    get:
      operationId: getFlag
      summary: One flag (editor).
      responses:
        "200":
          description: The flag, with the namespace version.
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Flag"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
    put:
      operationId: putFlag
      summary: Create or replace a flag's definition (editor); problems are reported under `flag`.
      parameters:
        - $ref: "#/components/parameters/ifMatch"
        - $ref: "#/components/parameters/source"
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: [flag]
              properties:
                flag: {$ref: "#/components/schemas/FlagDefinition"}
                reason: {type: string}
      responses:
        "200": {$ref: "#/components/responses/Committed"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}
    delete:
      operationId: deleteFlag
      summary: Delete a flag and every reference to it (plugin points, kill switch members) (editor).
      parameters:
        - $ref: "#/components/parameters/ifMatch"
        - $ref: "#/components/parameters/source"
        - {name: reason, in: query, schema: {type: string}}
      responses:
        "200": {$ref: "#/components/responses/Committed"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/flags/{key}/enable:
    parameters:
      - $ref: "#/components/parameters/namespace"
      - $ref: "#/components/parameters/key"
    post:
      operationId: enableFlag
      summary: Clear a plugin switch's global disable, or remove the scoped disable equal to `scope` (editor).
      parameters:
        - $ref: "#/components/parameters/ifMatch"
        - $ref: "#/components/parameters/source"
      requestBody:
        $ref: "#/components/requestBodies/ScopeAndReason"
      responses:
        "200": {$ref: "#/components/responses/Committed"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/flags/{key}/disable:
    parameters:
      - $ref: "#/components/parameters/namespace"
      - $ref: "#/components/parameters/key"
    post:
      operationId: disableFlag
      summary: Disable a plugin switch everywhere, or add a scoped disable for `scope` (editor).
      parameters:
        - $ref: "#/components/parameters/ifMatch"
        - $ref: "#/components/parameters/source"
      requestBody:
        $ref: "#/components/requestBodies/ScopeAndReason"
      responses:
        "200": {$ref: "#/components/responses/Committed"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/flags/{key}/rollout:
    parameters:
      - $ref: "#/components/parameters/namespace"
      - $ref: "#/components/parameters/key"
    post:
      operationId: setRollout
      summary: Set a plugin switch's default rollout, a rule's rollout, or a targeted rule's (editor).
      description: |
        Without `rule` or `conditions`: the default rollout. With `rule`: that rule (numbered from 0). With
        `conditions`: the first rule whose conditions are exactly these, or a new rule appended after the
        existing ones. The response's `rule` names the rule set.
      parameters:
        - $ref: "#/components/parameters/ifMatch"
        - $ref: "#/components/parameters/source"
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: [rollout]
              properties:
                rollout: {$ref: "#/components/schemas/BasisPoints"}
                rule: {type: integer, minimum: 0}
                conditions: {$ref: "#/components/schemas/ConditionLists"}
                reason: {type: string}
      responses:
        "200": {$ref: "#/components/responses/Committed"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/flags/{key}/targeting:
    parameters:
      - $ref: "#/components/parameters/namespace"
      - $ref: "#/components/parameters/key"
    post:
      operationId: editTargeting
      summary: Add and remove cities, cohorts, platforms and allowlisted units in a rule (editor).
      description: |
        `rule` may be left out when the flag has exactly one rule; a plugin switch without rules gets a new one
        (pass `rollout` for it). Removing a value the rule does not list is a 400 naming it.
      parameters:
        - $ref: "#/components/parameters/ifMatch"
        - $ref: "#/components/parameters/source"
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              properties:
                rule: {type: integer, minimum: 0}
                add: {$ref: "#/components/schemas/ConditionLists"}
                remove: {$ref: "#/components/schemas/ConditionLists"}
                rollout: {$ref: "#/components/schemas/BasisPoints"}
                reason: {type: string}
      responses:
        "200": {$ref: "#/components/responses/Committed"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/kill-switches:
    parameters:
      - $ref: "#/components/parameters/namespace"
    get:
      operationId: listKillSwitches
      summary: The master and group kill switches with their members and entries (editor).
      responses:
        "200":
          description: The kill switches.
          headers:
            ETag: {$ref: "#/components/headers/ETag"}
          content:
            application/json:
              schema:
                type: object
                required: [namespace, version, kill_switches]
                properties:
                  namespace: {type: string}
                  version: {type: integer}
                  kill_switches:
                    type: array
                    items: {$ref: "#/components/schemas/KillSwitch"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/kill-switches/{key}/kill:
    parameters:
      - $ref: "#/components/parameters/namespace"
      - $ref: "#/components/parameters/key"
    post:
      operationId: kill
      summary: Add a kill entry; without `scope` it kills everywhere (editor; a reason by default).
      parameters:
        - $ref: "#/components/parameters/ifMatch"
        - $ref: "#/components/parameters/source"
      requestBody:
        $ref: "#/components/requestBodies/ScopeAndReason"
      responses:
        "200": {$ref: "#/components/responses/Committed"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}

  /v1/namespaces/{namespace}/kill-switches/{key}/revive:
    parameters:
      - $ref: "#/components/parameters/namespace"
      - $ref: "#/components/parameters/key"
    post:
      operationId: revive
      summary: Remove the kill entry equal to `scope` (none - the everywhere entry; `all` - every entry) (editor).
      parameters:
        - $ref: "#/components/parameters/ifMatch"
        - $ref: "#/components/parameters/source"
      requestBody:
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              properties:
                scope: {$ref: "#/components/schemas/Scope"}
                all: {type: boolean}
                reason: {type: string}
      responses:
        "200": {$ref: "#/components/responses/Committed"}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}

  /v1/audit:
    get:
      operationId: audit
      summary: The audit log, newest first, filtered and paged (editor).
      description: |
        A token limited to namespaces sees only their entries. Page by passing `next_cursor` as `cursor`.
      parameters:
        - {name: namespace, in: query, schema: {type: string}}
        - {name: flag, in: query, description: "A flag, kill switch or plugin point key, or a token name or id.", schema: {type: string}}
        - {name: actor, in: query, schema: {type: string}}
        - {name: source, in: query, schema: {$ref: "#/components/schemas/Source"}}
        - {name: since, in: query, description: Inclusive RFC 3339 time., schema: {type: string, format: date-time}}
        - {name: until, in: query, description: Exclusive RFC 3339 time., schema: {type: string, format: date-time}}
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 1000, default: 50}}
        - {name: cursor, in: query, schema: {type: integer, minimum: 1}}
      responses:
        "200":
          description: A page of entries.
          content:
            application/json:
              schema:
                type: object
                required: [entries, next_cursor]
                properties:
                  entries:
                    type: array
                    items: {$ref: "#/components/schemas/AuditEntry"}
                  next_cursor: {type: [integer, "null"]}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}

  /v1/tokens:
    get:
      operationId: listTokens
      summary: Every token, live and revoked, without secrets (admin for every namespace).
      responses:
        "200":
          description: The tokens.
          content:
            application/json:
              schema:
                type: object
                required: [tokens]
                properties:
                  tokens:
                    type: array
                    items: {$ref: "#/components/schemas/Token"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
    post:
      operationId: createToken
      summary: Create a token; its secret is in this response only (admin for every namespace).
      description: |
        A `client` token must list its `namespaces` (400 otherwise, saying how): client tokens ship inside apps,
        where anyone can read them. A `metrics` token must not (it reads `/metrics`, which covers every namespace).
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: [name, role]
              properties:
                name: {type: string, minLength: 1, maxLength: 64}
                role: {$ref: "#/components/schemas/Role"}
                namespaces:
                  type: array
                  minItems: 1
                  items: {type: string}
                  description: The namespaces the token may use; required for `client`, left out for `metrics`, every namespace when left out.
                rate_per_minute:
                  type: integer
                  minimum: 1
                  maximum: 1000000
                  description: The most OFREP requests per minute (default flagsd's `--ofrep-rate-limit`).
      responses:
        "201":
          description: The token, with `token` (the secret, `sy_<role>_…`).
          content:
            application/json:
              schema:
                allOf:
                  - {$ref: "#/components/schemas/Token"}
                  - type: object
                    required: [token]
                    properties:
                      token: {type: string}
        "400": {$ref: "#/components/responses/Problem"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}

  /v1/tokens/{token}:
    parameters:
      - {name: token, in: path, required: true, description: The token's id or live name., schema: {type: string}}
    delete:
      operationId: revokeToken
      summary: Revoke a token (admin for every namespace).
      description: |
        The last live admin token valid in every namespace cannot be revoked (409 `last-admin-token`): create
        another one first, so that someone can always manage tokens.
      responses:
        "200":
          description: The revoked token.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Token"}
        "401": {$ref: "#/components/responses/Problem"}
        "403": {$ref: "#/components/responses/Problem"}
        "404": {$ref: "#/components/responses/Problem"}
        "409": {$ref: "#/components/responses/Problem"}

  /ofrep/v1/evaluate/flags/{key}:
    parameters:
      - name: key
        in: path
        required: true
        description: The flag key (`[A-Za-z0-9._-]`); percent-encoding is decoded.
        schema: {type: string}
      - {$ref: "#/components/parameters/ofrepNamespace"}
    post:
      operationId: ofrepEvaluateFlag
      tags: [OpenFeature]
      summary: "OFREP: evaluate one flag for a context (client role)."
      description: |
        Plugin switches answer `true`/`false` with variant `on`/`off`; experiment flags their variant's typed
        value (floats always with a decimal point). A killed experiment answers without `value`: use the code
        default (OFREP ADR 0006). `reason` is STATIC (also for Switchyard's DEFAULT), TARGETING_MATCH, SPLIT,
        DISABLED or UNKNOWN. Errors are never a 200: 400 for a malformed body or context and for a flag that
        needs a bucket when the context has no `targetingKey`, 404 for an unknown flag.
      security: [{bearer: []}, {apiKey: []}]
      requestBody: {$ref: "#/components/requestBodies/OFREPContext"}
      responses:
        "200":
          description: The evaluation.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/OFREPEvaluation"}
        "400": {$ref: "#/components/responses/OFREPError"}
        "401": {$ref: "#/components/responses/OFREPError"}
        "403": {$ref: "#/components/responses/OFREPError"}
        "404": {$ref: "#/components/responses/OFREPError"}
        "429": {$ref: "#/components/responses/OFREPRateLimited"}
        "500": {$ref: "#/components/responses/OFREPError"}

  /ofrep/v1/evaluate/flags:
    parameters:
      - {$ref: "#/components/parameters/ofrepNamespace"}
    post:
      operationId: ofrepEvaluateFlags
      tags: [OpenFeature]
      summary: "OFREP: evaluate every flag of the namespace for a context (client role)."
      description: |
        Items as in the single-flag answer; a flag that needs a bucket when the context has no `targetingKey`
        is an item with `errorCode` TARGETING_KEY_MISSING. `ETag` hashes the answer, so it changes exactly when
        the result for this context changes; `If-None-Match` with it gets 304 while the result stays the same.
      security: [{bearer: []}, {apiKey: []}]
      parameters:
        - name: If-None-Match
          in: header
          description: An `ETag` of an earlier answer (weak comparison; `*` matches any).
          schema: {type: string}
      requestBody: {$ref: "#/components/requestBodies/OFREPContext"}
      responses:
        "200":
          description: Every flag's evaluation.
          headers:
            ETag: {description: A hash of this answer., schema: {type: string}}
          content:
            application/json:
              schema:
                type: object
                required: [flags]
                properties:
                  flags:
                    type: array
                    items:
                      oneOf:
                        - {$ref: "#/components/schemas/OFREPEvaluation"}
                        - {$ref: "#/components/schemas/OFREPError"}
                  metadata:
                    type: object
                    properties:
                      namespace: {type: string}
        "304":
          description: The result for this context is the one tagged by `If-None-Match`; no body.
          headers:
            ETag: {description: The same tag., schema: {type: string}}
        "400": {$ref: "#/components/responses/OFREPError"}
        "401": {$ref: "#/components/responses/OFREPError"}
        "403": {$ref: "#/components/responses/OFREPError"}
        "429": {$ref: "#/components/responses/OFREPRateLimited"}
        "500": {$ref: "#/components/responses/OFREPError"}

components:
  securitySchemes:
    bearer:
      type: http
      scheme: bearer
    apiKey:
      type: apiKey
      in: header
      name: X-API-Key
      description: OFREP routes only; the same tokens as `bearer`.

  parameters:
    namespace: {name: namespace, in: path, required: true, schema: {type: string}}
    key: {name: key, in: path, required: true, description: A flag or kill switch key., schema: {type: string}}
    version: {name: version, in: path, required: true, schema: {type: integer, minimum: 1}}
    wait:
      name: wait
      in: query
      description: Seconds to hold the request (clamped to the server's cap, 30 by default); negative or non-numeric is a 400.
      schema: {type: integer, minimum: 0}
    ifMatch:
      name: If-Match
      in: header
      description: The `ETag` the change is based on; 409 when the namespace has moved on.
      schema: {type: string}
    source:
      name: X-Switchyard-Source
      in: header
      schema: {type: string, enum: [api, cli, console, apply], default: api}
    ofrepNamespace:
      name: X-Switchyard-Namespace
      in: header
      description: |
        The namespace to evaluate in. A token limited to one namespace evaluates there (naming another is a
        403); otherwise this header, else flagsd's `--default-namespace`.
      schema: {type: string}

  headers:
    ETag:
      description: '"<epoch>.<version>" of the namespace.'
      schema: {type: string}

  requestBodies:
    ReasonOnly:
      content:
        application/json:
          schema:
            type: object
            additionalProperties: false
            properties:
              reason: {type: string}
    ScopeAndReason:
      content:
        application/json:
          schema:
            type: object
            additionalProperties: false
            properties:
              scope: {$ref: "#/components/schemas/Scope"}
              reason: {type: string}

    OFREPContext:
      required: true
      content:
        application/json:
          schema:
            type: object
            properties:
              context:
                type: object
                description: |
                  `targetingKey` (the unit id), `city`, `cohort` or `cohorts` (a string or a list), `appVersion`,
                  `platform`; other members pass through. An empty context (or body) is accepted.
                properties:
                  targetingKey: {type: string}
                  city: {type: string}
                  cohort: {oneOf: [{type: string}, {type: array, items: {type: string}}]}
                  cohorts: {oneOf: [{type: string}, {type: array, items: {type: string}}]}
                  appVersion: {type: string}
                  platform: {type: string}
                additionalProperties: true

  responses:
    OFREPError:
      description: An OFREP error body (not problem+json).
      content:
        application/json:
          schema: {$ref: "#/components/schemas/OFREPError"}
    OFREPRateLimited:
      description: The token exceeded its request rate; retry after `Retry-After` whole seconds.
      headers:
        Retry-After: {schema: {type: integer, minimum: 1}}
      content:
        application/json:
          schema: {$ref: "#/components/schemas/OFREPError"}
    Problem:
      description: An RFC 9457 problem.
      content:
        application/problem+json:
          schema: {$ref: "#/components/schemas/Problem"}
    TooManyRequests:
      description: |
        A budget is spent: the token's or the source address's events per minute (`--events-rate-per-token`,
        `--events-rate-per-address`), the ingestion backlog (`--events-backlog`), or the long-polls one source address
        may have parked (`--max-waiters-per-address`). Nothing of the request was done; retry after `Retry-After`
        whole seconds, with jitter.
      headers:
        Retry-After: {schema: {type: integer, minimum: 1}}
      content:
        application/problem+json:
          schema: {$ref: "#/components/schemas/Problem"}
    Overloaded:
      description: Too many waiting requests; retry after `Retry-After` seconds, with jitter.
      headers:
        Retry-After: {schema: {type: integer}}
      content:
        application/problem+json:
          schema: {$ref: "#/components/schemas/Problem"}
    Committed:
      description: The namespace after the change; `ETag` is its version.
      headers:
        ETag: {$ref: "#/components/headers/ETag"}
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Committed"}

  schemas:
    OFREPEvaluation:
      type: object
      required: [key, variant, reason]
      properties:
        key: {type: string}
        value:
          description: Boolean, string, integer, float (with a decimal point) or object; absent for the code default.
        variant: {type: string, description: "`on`/`off` for plugin switches, the variant key for experiments."}
        reason: {type: string, enum: [STATIC, TARGETING_MATCH, SPLIT, DISABLED, UNKNOWN]}
        metadata:
          type: object
          description: |
            `flag_type`, `decided_by`, and as they apply `kill_switch`, `kill_entry`, `scope`, `disabled_scope`,
            `rule`, `bucket`, `code_default`; single-flag answers add `namespace` and `version`.
          additionalProperties: {type: [boolean, string, number]}
    OFREPError:
      type: object
      required: [errorCode, errorDetails]
      properties:
        key: {type: string, description: The flag key (single-flag route).}
        errorCode:
          type: string
          enum: [PARSE_ERROR, INVALID_CONTEXT, TARGETING_KEY_MISSING, FLAG_NOT_FOUND, GENERAL]
        errorDetails: {type: string, description: What failed, with which input, and what to do next.}
    Status:
      type: object
      required: [status]
      properties:
        status: {type: string}
    Problem:
      type: object
      required: [type, title, status, detail]
      properties:
        type: {type: string, description: "urn:switchyard:problem:<slug>"}
        title: {type: string}
        status: {type: integer}
        detail: {type: string, description: What failed, with which input, and what to do next.}
        instance: {type: string}
        request_id: {type: string}
        errors:
          type: array
          items:
            type: object
            required: [path, message]
            properties:
              path: {type: string, description: "A field path such as flag.rules[1].rollout, a query parameter or a header."}
              message: {type: string}
        current_version: {type: integer, description: On a version conflict.}
        current_etag: {type: string}
        changed_by: {type: [string, "null"]}
        changed_at: {type: [string, "null"], format: date-time}
    ReasonPolicy:
      type: string
      enum: [always, kills, never]
      description: When a change needs a reason; `kills` (the default) for changes that add a kill entry.
    Source:
      type: string
      enum: [api, cli, console, apply, crash-guard]
    Role:
      type: string
      enum: [client, reporter, editor, admin, metrics]
      description: client ⊂ reporter ⊂ editor ⊂ admin; `metrics` reads `/metrics` only.
    BasisPoints:
      type: integer
      minimum: 0
      maximum: 10000
    Scope:
      type: object
      additionalProperties: false
      description: Units matching every attribute named; an empty scope is everywhere.
      properties:
        cities: {type: array, items: {type: string}}
        cohorts: {type: array, items: {type: string}}
    ConditionLists:
      type: object
      additionalProperties: false
      properties:
        cities: {type: array, items: {type: string}}
        not_cities: {type: array, items: {type: string}}
        cohorts: {type: array, items: {type: string}}
        not_cohorts: {type: array, items: {type: string}}
        units: {type: array, items: {type: string}}
        platforms: {type: array, items: {type: string}}
    FlagSet:
      type: object
      description: |
        A flag set document as in a flag file (docs/flag-files.md) with rollouts in basis points:
        `namespace` (may be left out in requests), `description`, `crash_guard`, `plugin_points`, `kill_switches`,
        `flags`.
      properties:
        namespace: {type: string}
        description: {type: string}
        plugin_points: {type: array, items: {type: object}}
        kill_switches: {type: object}
        flags: {type: object, additionalProperties: {$ref: "#/components/schemas/FlagDefinition"}}
    FlagDefinition:
      type: object
      description: |
        A flag as under `flags.<key>` of a flag set: `type` (plugin_switch or experiment, inferred for
        `plugin_switch_` keys), `description`, `owner`; plugin switches: `disabled`, `disabled_scopes`, `rules`
        (conditions and `rollout`), `rollout`, `crash_guard`; experiments: `value_type`, `variants`, `default_variant`,
        `weights`, `rules` (conditions and `weights`).
    Flag:
      allOf:
        - {$ref: "#/components/schemas/FlagDefinition"}
        - type: object
          required: [key, kill_switches, plugin_point]
          properties:
            key: {type: string}
            kill_switches: {type: array, items: {type: string}, description: The kill switches covering it.}
            plugin_point: {type: [string, "null"]}
            version: {type: integer}
    KillSwitch:
      type: object
      required: [key, members, entries, killed_everywhere]
      properties:
        key: {type: string}
        description: {type: [string, "null"]}
        members: {type: array, items: {type: string}}
        entries: {type: array, items: {$ref: "#/components/schemas/Scope"}}
        killed_everywhere: {type: boolean}
    Snapshot:
      type: object
      description: The snapshot document (docs/snapshot.md), canonical JSON with a checksum.
      required: [format, namespace, epoch, version, checksum]
      properties:
        format: {type: integer}
        namespace: {type: string}
        epoch: {type: string}
        version: {type: integer}
        checksum: {type: string}
    SnapshotDelta:
      type: object
      description: |
        What changed from `base_version` to `version` (docs/snapshot.md, "Deltas"): flags, kill switches and plugin
        points to upsert (whole, written as in the snapshot) and to remove, the plugin points' order when the delta
        touches them, the description when it changed (`null`: removed), and the checksum and digest of the full
        snapshot at `version`.
      required: [format, namespace, epoch, base_version, version, checksum, digest]
      additionalProperties: false
      properties:
        format: {type: integer, const: 1}
        namespace: {type: string}
        epoch: {type: string}
        base_version: {type: integer, minimum: 0}
        version: {type: integer, minimum: 1}
        checksum: {type: string, pattern: "^sha256:[0-9a-f]{64}$"}
        digest: {type: string, pattern: "^sha256:[0-9a-f]{64}$"}
        flags: {type: object, additionalProperties: {$ref: "#/components/schemas/FlagDefinition"}}
        removed_flags: {type: array, items: {type: string}}
        kill_switches: {type: object, additionalProperties: {type: object}}
        removed_kill_switches: {type: array, items: {type: string}}
        plugin_points: {type: array, items: {type: object}}
        removed_plugin_points: {type: array, items: {type: string}}
        plugin_point_order: {type: array, items: {type: string}}
        description: {type: [string, "null"]}
    Namespace:
      type: object
      required: [name, epoch, version, etag, reason_policy, created_at, updated_at]
      properties:
        name: {type: string}
        epoch: {type: string, description: Random id fixed at creation.}
        version: {type: integer}
        etag: {type: string}
        reason_policy: {$ref: "#/components/schemas/ReasonPolicy"}
        created_at: {type: string, format: date-time}
        updated_at: {type: string, format: date-time}
        description: {type: [string, "null"]}
        counts:
          type: object
          properties:
            flags: {type: integer}
            plugin_points: {type: integer}
            kill_switches: {type: integer}
    ObjectChange:
      type: object
      required: [kind, key, before, after]
      properties:
        kind: {type: string, enum: [flag, kill_switch, plugin_point, namespace]}
        key: {type: string}
        before: {description: The object before (null when it did not exist).}
        after: {description: The object after (null when it was deleted).}
    Change:
      type: object
      required: [version, time, actor, source, reason, summary, changes]
      properties:
        version: {type: integer}
        time: {type: string, format: date-time}
        actor: {type: string, description: The token's name.}
        source: {$ref: "#/components/schemas/Source"}
        reason: {type: [string, "null"]}
        summary: {type: string}
        changes:
          type: array
          items: {$ref: "#/components/schemas/ObjectChange"}
        evidence: {$ref: "#/components/schemas/GuardEvidence", description: "Only on the crash guard's changes."}
    Committed:
      type: object
      required: [namespace, version, etag, changed, change]
      properties:
        namespace: {type: string}
        version: {type: integer}
        etag: {type: string}
        changed: {type: boolean}
        change:
          oneOf:
            - {$ref: "#/components/schemas/Change"}
            - {type: "null"}
        flag: {description: The flag after the change (flag routes).}
        kill_switch: {description: The kill switch after the change (kill switch routes).}
        rule: {type: [integer, "null"], description: The rule edited (rollout and targeting routes).}
    AuditEntry:
      type: object
      required: [id, time, actor, source, action, namespace, version, reason, summary, changes]
      properties:
        id: {type: integer}
        time: {type: string, format: date-time}
        actor: {type: string}
        source: {$ref: "#/components/schemas/Source"}
        action: {type: string, enum: [change, namespace.create, namespace.update, namespace.delete, token.create, token.revoke,
                                      guard.propose, guard.dismiss]}
        namespace: {type: [string, "null"]}
        version: {type: [integer, "null"]}
        reason: {type: [string, "null"]}
        summary: {type: string}
        changes:
          type: array
          items: {$ref: "#/components/schemas/ObjectChange"}
    GuardCheck:
      type: object
      description: One crash-rate test. Rates are fractions.
      required: [sessions, crashes, crash_rate, lower_bound, threshold, baseline_rate, bound, shortfall]
      properties:
        sessions: {type: integer, description: Sessions with the switch active.}
        crashes: {type: integer, description: Of those, sessions that crashed.}
        crash_rate: {type: [number, "null"]}
        lower_bound: {type: [number, "null"], description: The one-sided Wilson lower bound at the policy's confidence.}
        threshold: {type: number, description: The policy's max_crash_rate.}
        baseline_rate: {type: [number, "null"], description: "The crash rate of sessions without the switch (with baseline_ratio)."}
        bound: {type: number, description: What the lower bound must exceed.}
        shortfall: {type: array, items: {type: string}, description: "What keeps it from tripping: `35 of 200 sessions needed`."}
        units: {type: [integer, "null"], description: Distinct units among the crashed sessions.}
        addresses: {type: [integer, "null"], description: "Distinct source addresses among the crashed sessions (clients' sessions; null for reporters')."}
        left_out:
          type: array
          items: {type: string}
          description: |
            For a switch in nearly every session: the switches shown to crash whose sessions were left out (the
            counts are then those of the sessions without them, `sessions` an upper bound).
    GuardTrip:
      type: object
      required: [switch, scope, version, time, actor, automatic, proposal, reason, evidence, reenabled]
      properties:
        switch: {type: string}
        scope: {$ref: "#/components/schemas/Scope"}
        version: {type: integer, description: The namespace version the trip took.}
        time: {type: string, format: date-time}
        actor: {type: string, description: "`crash-guard`, or the person who applied a proposal."}
        automatic: {type: boolean, description: Made by the guard itself (what its trip budget counts).}
        proposal: {type: [integer, "null"], description: The proposal a person applied with this change.}
        reason: {type: [string, "null"]}
        evidence: {$ref: "#/components/schemas/GuardEvidence"}
        in_force: {type: boolean, description: "trips route: the switch is still off in the trip's scope."}
        reenabled:
          oneOf:
            - type: object
              required: [version, time, actor, deleted]
              properties:
                version: {type: integer}
                time: {type: string, format: date-time}
                actor: {type: string}
                deleted: {type: boolean, description: The switch was deleted rather than enabled.}
            - {type: "null"}
    GuardEvidence:
      type: object
      description: |
        Why the crash guard tripped: the counts over the window and scope, the rate, its lower bound, the bound,
        the sessions outside the scope (`complement`, for a scoped trip) and the policy. Kept with the change
        log entry and the audit entry (`evidence`).
      properties:
        rule: {type: string, enum: [wilson-lower-bound]}
        switch: {type: string}
        source: {type: string, enum: [client, reporter], description: Whose sessions tripped it.}
        scope: {$ref: "#/components/schemas/Scope"}
        scope_text: {type: string, description: "`everywhere`, `city lagos`, `cohort beta`."}
        window: {type: string}
        from: {type: string, format: date-time}
        until: {type: string, format: date-time}
        sessions: {type: integer}
        crashes: {type: integer}
        crash_rate: {type: number}
        lower_bound: {type: number}
        confidence: {type: number}
        threshold: {type: number}
        baseline_rate: {type: [number, "null"]}
        bound: {type: number}
        units: {type: [integer, "null"], description: Distinct units among the crashed sessions.}
        addresses: {type: [integer, "null"], description: Distinct source addresses among them (null for a reporter's sessions).}
        left_out: {type: array, items: {type: string}, description: Switches shown to crash whose sessions were left out.}
        attribution:
          type: string
          enum: [baseline, threshold, without-switches-shown-to-crash]
          description: |
            How the switch was held responsible: against sessions without it (`baseline`), against the threshold
            alone, or on the sessions without the switches shown to crash (a switch in nearly every session).
        proposal: {type: integer, description: The proposal a person applied (their change only).}
        proposed_because: {type: string, enum: [budget, scoped_disables], description: A proposal's evidence only.}
        complement:
          oneOf:
            - {$ref: "#/components/schemas/GuardCheck"}
            - {type: "null"}
        policy: {type: object, description: The resolved crash guard policy (percentages in basis points).}
      example:
        rule: wilson-lower-bound
        switch: plugin_switch_feed_promos
        scope: {cities: [lagos]}
        scope_text: city lagos
        window: 10m
        from: "2026-11-24T09:02:00.000Z"
        until: "2026-11-24T09:12:03.118Z"
        sessions: 1228
        crashes: 61
        crash_rate: 0.04967
        lower_bound: 0.03375
        confidence: 0.999
        threshold: 0.02
        baseline_rate: null
        bound: 0.02
        units: 1190
        addresses: 1043
        left_out: []
        attribution: threshold
        source: client
        complement: {sessions: 20114, crashes: 22, crash_rate: 0.00109, lower_bound: 0.00058, threshold: 0.02, baseline_rate: null, bound: 0.02, exceeds: false, shortfall: ["lower bound 0.058% ≤ bound 2%"]}
    GuardSwitchStatus:
      allOf:
        - {$ref: "#/components/schemas/GuardCheck"}
        - type: object
          required: [key, state, window, from, until, disabled, disabled_scopes, cooling_down_until, would_trip, scopes, open_trips, last_trip, policy]
          properties:
            key: {type: string}
            state: {type: string, enum: [watching, tripping, tripped, proposed, disabled, cooling_down, "off"]}
            source: {type: string, enum: [client, reporter], description: Whose counts these are.}
            sources:
              type: array
              description: Each source with sessions of the switch, and whether the policy lets it trip the switch.
              items:
                allOf:
                  - {$ref: "#/components/schemas/GuardCheck"}
                  - type: object
                    properties:
                      source: {type: string, enum: [client, reporter]}
                      may_trip: {type: boolean}
            open_proposals: {type: array, items: {type: integer}, description: The ids of its open proposals.}
            window: {type: string, description: "The policy's window: 10m."}
            from: {type: string, format: date-time, description: The first minute counted.}
            until: {type: string, format: date-time}
            disabled: {type: boolean}
            disabled_scopes: {type: array, items: {$ref: "#/components/schemas/Scope"}}
            cooling_down_until: {type: [string, "null"], format: date-time}
            would_trip:
              oneOf:
                - type: object
                  properties:
                    scope: {$ref: "#/components/schemas/Scope"}
                    scope_text: {type: string}
                - {type: "null"}
            scopes:
              type: array
              description: Cities and cohorts whose own test exceeds the bound.
              items:
                allOf:
                  - {$ref: "#/components/schemas/GuardCheck"}
                  - type: object
                    properties:
                      kind: {type: string, enum: [city, cohort]}
                      value: {type: string}
            open_trips: {type: array, items: {$ref: "#/components/schemas/GuardTrip"}}
            last_trip:
              oneOf:
                - {$ref: "#/components/schemas/GuardTrip"}
                - {type: "null"}
            policy: {type: object, description: The resolved crash guard policy (percentages in basis points).}
    GuardProposal:
      type: object
      required: [id, switch, scope, scope_text, time, state, proposed_because, reason, evidence, apply, dismissed]
      properties:
        id: {type: integer, description: The id of its audit entry (action guard.propose).}
        switch: {type: string}
        scope: {$ref: "#/components/schemas/Scope"}
        scope_text: {type: string}
        time: {type: string, format: date-time}
        state: {type: string, enum: [open, applied, dismissed, superseded]}
        proposed_because: {type: string, enum: [budget, scoped_disables]}
        reason: {type: [string, "null"], description: Why it proposes, then the trip's reason.}
        evidence: {$ref: "#/components/schemas/GuardEvidence"}
        apply: {type: string, description: "The command that applies it: `flagctl guard apply 42 -n rider`."}
        dismissed:
          oneOf:
            - type: object
              required: [time, actor, reason]
              properties:
                time: {type: string, format: date-time}
                actor: {type: string}
                reason: {type: [string, "null"]}
            - {type: "null"}
    Token:
      type: object
      required: [id, name, role, namespaces, created_at, created_by, revoked_at]
      properties:
        id: {type: string}
        name: {type: string}
        role: {$ref: "#/components/schemas/Role"}
        namespaces: {type: [array, "null"], items: {type: string}}
        rate_per_minute: {type: [integer, "null"], description: OFREP requests per minute; null for the server's default.}
        created_at: {type: string, format: date-time}
        created_by: {type: string}
        revoked_at: {type: [string, "null"], format: date-time}
"""#
}
