import Foundation
package import SwitchyardCore

extension FlagClient {
    /// Keeps the snapshot current and sends queued events, until the calling task is cancelled.
    ///
    /// Long-polls `GET /v1/namespaces/{ns}/snapshot`, backs off with jitter on failures, honours `Retry-After`,
    /// persists every accepted snapshot, and sends event batches. Start it once, from a task the app owns
    /// (or as a ServiceLifecycle service); cancel that task to stop. Returns when cancelled. A second call while
    /// one is running returns at once.
    public func run() async {
        let alreadyRunning = isRunning.withLock { running in
            defer { running = true }
            return running
        }
        guard !alreadyRunning else { return }
        defer { isRunning.withLock { $0 = false } }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.runSync(clock: self.configuration.clock) }
            group.addTask { await self.runEvents(clock: self.configuration.clock) }
            if configuration.stalenessLimit != nil {
                group.addTask { await self.runStalenessWatch(clock: self.configuration.clock) }
            }
            await group.waitForAll()
        }
    }

    /// The snapshot sync loop: the state machine's actions, performed.
    package func runSync<C: Clock<Duration>>(clock: C) async {
        let installed = shared.withLock { $0.compiled.map { SnapshotVersion(epoch: $0.epoch, version: $0.version) } }
        let policy = SyncStateMachine.Policy(
            namespace: namespace, longPollWait: configuration.longPollWait,
            minimumPollInterval: configuration.minimumPollInterval,
            backoff: configuration.backoff, maximumRetryAfter: configuration.maximumRetryAfter,
            deltas: configuration.deltas)
        var machine = SyncStateMachine(policy: policy, installed: installed, random: configuration.random)
        while !Task.isCancelled {
            switch machine.nextAction() {
            case .sleep(let duration):
                do { try await clock.sleep(for: duration) } catch { return }
            case .fetch(let request):
                let started = clock.now
                let outcome = await fetchSnapshot(request)
                if Task.isCancelled { return }
                let held = machine.installed
                let verdict = machine.received(outcome, elapsed: started.duration(to: clock.now))
                if case .applyDelta(let delta) = verdict {
                    if let error = applyDelta(delta) {
                        machine.deltaFailed(error, installed: held)
                        apply(.reject(error), consecutiveFailures: machine.consecutiveFailures)
                        if !machine.asksForDeltas {
                            report(
                                ClientReport(
                                    kind: .syncFailed,
                                    message:
                                        "three deltas in a row were unusable; asking for full snapshots only until the client restarts"
                                ))
                        }
                    } else {
                        machine.deltaApplied()
                    }
                } else {
                    if case .reject(let error) = verdict, machine.needsFullSnapshot {
                        report(ClientReport(kind: .syncFailed, message: error.message, error: error))
                    } else {
                        apply(verdict, consecutiveFailures: machine.consecutiveFailures)
                    }
                }
                // The next delta needs the digest of what is installed: worked out now, while the request waits.
                if machine.asksForDeltas { prepareDigest() }
            }
        }
    }

    /// Performs one snapshot request and decodes its answer. Never throws: every failure is an outcome.
    package func fetchSnapshot(_ request: SyncStateMachine.Request) async -> SyncStateMachine.Outcome {
        let query = request.wait.map { ["wait": String(Int64($0.secondsValue.rounded(.down)))] } ?? [:]
        guard let url = endpoint("snapshot", query: query) else {
            return .failed(
                ClientError(
                    .transport,
                    "cannot build a snapshot URL from \(configuration.serverURL) and namespace '\(namespace)'"))
        }
        // A delta only when asked for: a server that sends one anyway fails to decode as a snapshot.
        let accept = request.acceptsDelta ? "\(SnapshotDelta.mediaType), application/json" : "application/json"
        var headers = ["Authorization": "Bearer \(configuration.token)", "Accept": accept]
        if let tag = request.entityTag { headers["If-None-Match"] = tag }
        let http = HTTPRequest(
            url: url, headers: headers, timeout: (request.wait ?? .zero) + configuration.requestTimeout,
            maximumResponseSize: configuration.maximumSnapshotSize)
        let response: HTTPResponse
        do {
            response = try await snapshotTransport.send(http)
        } catch let error as ClientError {
            return .failed(error)
        } catch is CancellationError {
            return .failed(ClientError(.transport, "cancelled"))
        } catch {
            return .failed(ClientError(.transport, "\(url.absoluteString): \(error)"))
        }
        switch response.status {
        case 200 where request.acceptsDelta && Self.isDelta(contentType: response[header: "content-type"]):
            do {
                return .delta(try SnapshotDelta.decode(response.body))
            } catch {
                return .failed(
                    ClientError(
                        .invalidSnapshot,
                        "the server sent an unusable delta (\(response.body.count) bytes): \(error.message)"))
            }
        case 200:
            do {
                return .snapshot(try SnapshotDocument.decode(response.body), document: response.body)
            } catch {
                return .failed(
                    ClientError(
                        .invalidSnapshot,
                        "the server sent an unusable snapshot (\(response.body.count) bytes): \(error.message)"))
            }
        case 304:
            return .notModified
        case 429, 503:
            return .throttled(retryAfter: response.retryAfter, status: response.status)
        case 401, 403:
            return .failed(
                ClientError(
                    .httpStatus,
                    "the server refused the token (\(response.status)) for namespace '\(namespace)': check that it is a client token allowed this namespace. \(response.bodyExcerpt)",
                    status: response.status))
        case 404:
            return .failed(
                ClientError(
                    .httpStatus,
                    "the server has no namespace '\(namespace)' (404): check the namespace and the server URL. \(response.bodyExcerpt)",
                    status: 404))
        default:
            return .failed(
                ClientError(
                    .httpStatus, "the server answered \(response.status) to \(url.path): \(response.bodyExcerpt)",
                    status: response.status))
        }
    }

    /// Whether a `Content-Type` names the delta media type (parameters and case aside).
    static func isDelta(contentType: String?) -> Bool {
        guard let contentType else { return false }
        let type = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        return type == SnapshotDelta.mediaType
    }

    /// `<server>/v1/namespaces/<namespace>/<resource>`, keeping a path prefix of the server URL.
    func endpoint(_ resource: String, query: [String: String] = [:]) -> URL? {
        var components = URLComponents(url: configuration.serverURL, resolvingAgainstBaseURL: false)
        let base = components?.percentEncodedPath ?? ""
        let allowed = CharacterSet.urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))
        let namespacePath = namespace.addingPercentEncoding(withAllowedCharacters: allowed) ?? namespace
        components?.percentEncodedPath =
            (base.hasSuffix("/") ? String(base.dropLast()) : base)
            + "/v1/namespaces/\(namespacePath)/\(resource)"
        if !query.isEmpty {
            components?.queryItems = query.sorted { $0.key < $1.key }.map {
                URLQueryItem(name: $0.key, value: $0.value)
            }
        }
        return components?.url
    }

    /// Applies a verdict of the state machine.
    package func apply(_ verdict: SyncStateMachine.Verdict, consecutiveFailures: Int) {
        switch verdict {
        case .install(let snapshot, let document):
            install(snapshot, origin: .server, document: document)
        case .applyDelta(let delta):
            if let error = applyDelta(delta) { apply(.reject(error), consecutiveFailures: consecutiveFailures) }
        case .confirm:
            confirm()
        case .reject(let error):
            shared.withLock { shared in
                shared.consecutiveFailures = consecutiveFailures
                shared.lastError = error
            }
            report(
                ClientReport(
                    kind: .syncFailed,
                    message:
                        "\(error.message) (failure \(consecutiveFailures) in a row; keeping the installed snapshot)",
                    error: error))
        }
    }

    /// Installs a snapshot the state machine accepted: compile, swap, persist, publish.
    /// - Parameter document: the verified document it was decoded from, which the cache stores as it is (nil:
    ///   the cache encodes the snapshot).
    package func install(_ snapshot: Snapshot, origin: SnapshotOrigin, document: [UInt8]? = nil) {
        let compiled = CompiledSnapshot(snapshot)
        let previous = shared.withLock { $0.compiled }
        // Of the same epoch, the change names what differs; of another, anything may have.
        let changed = previous.flatMap {
            $0.epoch == snapshot.epoch ? ChangedObjects(from: $0.snapshot.flagSet, to: snapshot.flagSet) : nil
        }
        install(compiled, digest: nil, changed: changed, origin: origin) { cache, now throws(ClientError) in
            try cache.store(snapshot, document: document, fetchedAt: now)
        }
    }

    /// Applies a delta to the installed snapshot (recompiling what it changes, checking the result's digest) and
    /// installs the result; nil when it did, the reason when it could not (nothing is changed then).
    package func applyDelta(_ delta: SnapshotDelta) -> ClientError? {
        let (held, heldDigest) = shared.withLock { ($0.compiled, $0.digest) }
        guard let held else {
            return ClientError(
                .invalidSnapshot, "the server sent a delta to a client without a snapshot; fetching the full snapshot")
        }
        let digest = heldDigest ?? SnapshotDigest(held.snapshot.flagSet)
        let next: CompiledSnapshot
        let nextDigest: SnapshotDigest
        do {
            (next, nextDigest) = try held.applying(delta, digest: digest)
        } catch {
            return ClientError(
                .invalidSnapshot,
                "the server sent an unusable delta to version \(delta.version): \(error.message); keeping version \(held.version) and fetching the full snapshot"
            )
        }
        shared.withLock { $0.deltasApplied += 1 }
        install(next, digest: nextDigest, changed: ChangedObjects(delta, appliedTo: held), origin: .server) {
            cache, now throws(ClientError) in
            try cache.append(delta, result: next.snapshot, fetchedAt: now)
        }
        return nil
    }

    /// Works out the digest of the installed snapshot when it is not known (after a full snapshot), so the next
    /// delta applies in time proportional to what it changes.
    func prepareDigest() {
        guard let compiled = shared.withLock({ $0.digest == nil ? $0.compiled : nil }) else { return }
        let digest = SnapshotDigest(compiled.snapshot.flagSet)
        shared.withLock { shared in
            if shared.compiled === compiled { shared.digest = digest }
        }
    }

    /// Swaps a compiled snapshot in, persists it, and publishes the change.
    ///
    /// - Parameters:
    ///   - digest: its digest sums, when known.
    ///   - changed: what differs from the snapshot it replaces (nil: anything may).
    ///   - persist: writes it to the cache as the last known good.
    func install(
        _ compiled: CompiledSnapshot, digest: SnapshotDigest?, changed: ChangedObjects?, origin: SnapshotOrigin,
        persist: (SnapshotCache, Date) throws(ClientError) -> Void
    ) {
        let snapshot = compiled.snapshot
        let now = wallClock()
        let (info, lifted, guardJSON) = update { shared in
            shared.compiled = compiled
            shared.digest = digest
            shared.origin = origin
            shared.fetchedAt = now
            shared.verifiedAt = now
            shared.consecutiveFailures = 0
            shared.lastError = nil
            shared.staleAnnounced = false
            shared.verifiedPersistedAt = now
            var lifted = shared.guardState.liftChanged(by: snapshot)
            lifted += shared.guardState.liftExpired(now: now, ttl: configuration.crashLoopGuard.ttl)
            return (shared.snapshotInfo, lifted, lifted.isEmpty ? nil : shared.guardState.json)
        }
        if let cache {
            do { try persist(cache, now) } catch {
                report(
                    ClientReport(
                        kind: .storageFailed,
                        message:
                            "\(error.message); the new snapshot is in use but not saved as the last known good one",
                        error: error))
            }
        }
        if let guardJSON, let directory = configuration.directory {
            Self.write(
                guardJSON, to: directory.appendingPathComponent(CrashLoopGuardState.fileName), sync: true,
                report: report)
        }
        if !lifted.isEmpty {
            report(
                ClientReport(
                    kind: .crashGuardLifted,
                    message:
                        "the crash-loop guard released \(lifted.joined(separator: ", ")): version \(snapshot.version) changed \(lifted.count == 1 ? "its definition" : "their definitions"), or the TTL passed",
                    flagKeys: lifted))
        }
        report(ClientReport(kind: .snapshotInstalled, message: "installed \(info?.description ?? "a snapshot")"))
        recordSplits()
        broadcaster.publish(FlagsChange(cause: .snapshotInstalled, snapshot: info, changed: changed))
    }

    /// The server confirmed the installed snapshot (304, or the same version again).
    func confirm() {
        let now = wallClock()
        let (cause, info, persistVerified, lifted, guardJSON) = update { shared in
            let wasStale = shared.state.isStale(now: now)
            let wasCached = shared.origin != .server
            shared.origin = .server
            shared.verifiedAt = now
            shared.consecutiveFailures = 0
            shared.lastError = nil
            let lifted = shared.guardState.liftExpired(now: now, ttl: configuration.crashLoopGuard.ttl)
            var persist: (String, Int64)?
            if let compiled = shared.compiled, now.timeIntervalSince(shared.verifiedPersistedAt ?? .distantPast) >= 60 {
                shared.verifiedPersistedAt = now
                persist = (compiled.epoch, compiled.version)
            }
            var cause: FlagsChange.Cause?
            if wasCached { cause = .confirmedLive } else if wasStale { cause = .becameFresh }
            if !lifted.isEmpty && cause == nil { cause = .crashGuardChanged }
            if wasStale { shared.staleAnnounced = false }
            return (cause, shared.snapshotInfo, persist, lifted, lifted.isEmpty ? nil : shared.guardState.json)
        }
        if let persistVerified, let cache {
            try? cache.storeVerified(epoch: persistVerified.0, version: persistVerified.1, at: now)
        }
        if let guardJSON, let directory = configuration.directory {
            Self.write(
                guardJSON, to: directory.appendingPathComponent(CrashLoopGuardState.fileName), sync: true,
                report: report)
            report(
                ClientReport(
                    kind: .crashGuardLifted,
                    message: "the crash-loop guard released \(lifted.joined(separator: ", ")): its TTL passed",
                    flagKeys: lifted))
        }
        if let cause { broadcaster.publish(FlagsChange(cause: cause, snapshot: info)) }
    }

    /// Publishes `becameStale` when the snapshot passes the staleness limit without a confirmation.
    package func runStalenessWatch<C: Clock<Duration>>(clock: C) async {
        let changes = broadcaster.subscribe(buffer: 1)
        var iterator = changes.makeAsyncIterator()
        while !Task.isCancelled {
            let (staleAfter, announced) = shared.withLock { ($0.state.staleAfter, $0.staleAnnounced) }
            if let staleAfter, !announced {
                let remaining = staleAfter.timeIntervalSince(wallClock())
                if remaining > 0 {
                    do { try await clock.sleep(for: .clampedSeconds(max(remaining, 0.001))) } catch { return }
                    continue
                }
                let info: SnapshotInfo?? = shared.withLock { shared in
                    guard !shared.staleAnnounced, shared.state.isStale(now: wallClock()) else { return .none }
                    shared.staleAnnounced = true
                    return .some(shared.snapshotInfo)
                }
                if let info { broadcaster.publish(FlagsChange(cause: .becameStale, snapshot: info)) }
                continue
            }
            // Nothing to watch until the next change (a new snapshot or confirmation moves the deadline).
            guard await iterator.next() != nil else { return }
        }
    }
}
