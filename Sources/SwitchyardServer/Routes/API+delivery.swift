import Foundation
import Hummingbird
import SwitchyardCore
import SwitchyardStorage
import SwitchyardWire

extension API {
    /// `GET /v1/namespaces/{namespace}/snapshot`: the snapshot, a conditional GET, or a long-poll.
    ///
    /// `SnapshotFastPathHandler` answers most of these requests before the router, through the same
    /// `snapshotAnswer` and `snapshotAfterWait`; this handler takes the rest (see its documentation).
    func snapshot(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let namespace = try parameter("namespace", context)
        let token = try await auth.authorize(request, role: .client, namespace: namespace)
        switch try snapshotAnswer(request, namespace: namespace) {
        case .now(let outcome):
            return outcome.reply.response
        case .wait(let position, let seconds, let current):
            let address = app.sourceAddress(of: request, context: context)
            let spent = try spendLongPollBudgets(token: token, address: address)
            let reason = await app.hub.wait(
                for: namespace, after: position, timeout: .seconds(seconds), address: address)
            refundLongPoll(spent, if: reason)
            return try snapshotAfterWait(
                reason, request: request, namespace: namespace, waitedOn: current, after: position
            )
            .reply.response
        }
    }

    /// What a snapshot request that passed the access checks gets: an answer now, or a wait past a position.
    enum SnapshotAnswer {
        case now(SnapshotOutcome)
        case wait(after: SnapshotVersion, seconds: Int, current: PublishedSnapshot)
    }

    /// Decides a snapshot request (access already checked): `wait`, `If-None-Match`, `Accept`, `Accept-Encoding`.
    ///
    /// - Throws: `APIError` 400 for a bad `wait`, 404 for an unknown namespace.
    func snapshotAnswer(_ request: Request, namespace: String) throws -> SnapshotAnswer {
        let wait = try waitSeconds(request)
        guard let current = app.hub.snapshot(of: namespace) else { throw APIError.namespaceNotFound(namespace) }
        let tags = EntityTagList(request.headers.value(.ifNoneMatch))
        if let wait, wait > 0, let position = tags.waitPosition(current: current.position) {
            return .wait(after: position, seconds: wait, current: current)
        }
        if tags.matches(current.position) {
            return .now(.notModified(current))
        }
        let acceptsDelta = AcceptsDelta(request.headers.value(.accept)).accepted
        let base = acceptsDelta ? tags.deltaBase(current: current.position) : nil
        // A request that accepts deltas but holds nothing of this epoch to start one from: the full snapshot.
        if acceptsDelta && base == nil { app.hub.countAnswer(delta: false) }
        return .now(
            answer(current, deltaBase: base, gzip: AcceptEncoding(request.headers.value(.acceptEncoding)).acceptsGzip))
    }

    /// The answer to a snapshot request once its wait ended: the new snapshot (or the delta to it from the version
    /// the request waited on, when it accepts deltas), or 304 with the one it waited on.
    ///
    /// - Throws: `APIError` 404 when the namespace was deleted, 503 when too many requests wait already, 429 when
    ///   too many wait from the request's source address.
    func snapshotAfterWait(
        _ reason: WakeReason, request: Request, namespace: String, waitedOn current: PublishedSnapshot,
        after position: SnapshotVersion
    ) throws -> SnapshotOutcome {
        try snapshotAfterWait(
            reason, acceptsGzip: AcceptEncoding(request.headers.value(.acceptEncoding)).acceptsGzip,
            deltaBase: AcceptsDelta(request.headers.value(.accept)).accepted ? position.version : nil,
            namespace: namespace, waitedOn: current)
    }

    /// `snapshotAfterWait(_:request:namespace:waitedOn:after:)` with the request's headers read already: a parked
    /// request keeps those answers rather than the whole request.
    ///
    /// - Parameter deltaBase: the version the request waited past, when it accepts deltas (of `current`'s epoch).
    func snapshotAfterWait(
        _ reason: WakeReason, acceptsGzip: Bool, deltaBase: Int64?, namespace: String,
        waitedOn current: PublishedSnapshot
    ) throws -> SnapshotOutcome {
        switch reason {
        case .changed:
            guard let latest = app.hub.snapshot(of: namespace) else { throw APIError.namespaceNotFound(namespace) }
            if deltaBase != nil && latest.epoch != current.epoch { app.hub.countAnswer(delta: false) }
            return answer(latest, deltaBase: latest.epoch == current.epoch ? deltaBase : nil, gzip: acceptsGzip)
        case .timedOut, .shutdown, .cancelled:
            return .notModified(current)
        case .gone:
            throw APIError.namespaceNotFound(namespace)
        case .overloaded, .addressBusy:
            throw waitRefusal(reason)
        }
    }

    /// Spends a long-poll about to park from its source address's budget, for client tokens
    /// (`--long-poll-rate-per-address`, at each of the address's blocks: ``AddressBlock``), and from its token's
    /// (`--long-poll-rate-per-token`, off by default); all or nothing, the address's first.
    ///
    /// - Returns: the budgets charged, to give back when the hub refuses the long-poll (`refundLongPoll(_:if:)`).
    /// - Throws: `APIError` 429 with `Retry-After` naming the budget that refused; nothing is charged then.
    @discardableResult
    func spendLongPollBudgets(token: TokenRecord, address: IPAddress?) throws(APIError) -> [RateBuckets.Budget] {
        let configuration = app.configuration
        var budgets: [RateBuckets.Budget] = []
        var blocks: [AddressBlock] = []
        if token.role == .client, let rate = configuration.longPollRatePerAddress, let address {
            blocks = address.blocks
            budgets = address.budgets("address", ratePerMinute: rate)
        }
        if let rate = configuration.longPollRatePerToken {
            budgets.append(RateBuckets.Budget(key: "token:\(token.id)", ratePerMinute: rate))
        }
        guard !budgets.isEmpty, let refusal = app.longPollRates.spend(budgets) else { return budgets }
        if refusal.index < blocks.count, let rate = configuration.longPollRatePerAddress {
            app.hub.countRefused(.addressRate)
            let block = blocks[refusal.index]
            throw APIError.tooManyRequests(
                retryAfter: refusal.retryAfterSeconds, "Long-poll rate exceeded",
                "\(block.sender) may park \(block.cap(rate)) long-polls per minute and has used them; poll again after the Retry-After seconds, with jitter"
            )
        }
        app.hub.countRefused(.tokenRate)
        throw APIError.tooManyRequests(
            retryAfter: refusal.retryAfterSeconds, "Long-poll rate exceeded",
            "token '\(token.name)' may park \(configuration.longPollRatePerToken ?? 0) long-polls per minute and has used them; poll again after the Retry-After seconds, with jitter"
        )
    }

    /// Gives back a long-poll's budgets when the hub refused to park it (past a cap): a refusal costs nothing.
    func refundLongPoll(_ spent: [RateBuckets.Budget], if reason: WakeReason) {
        if reason == .overloaded || reason == .addressBusy { app.longPollRates.refund(spent) }
    }

    /// The answer to a long-poll refused for a cap: 503 past the waiter cap, 429 past the cap per address.
    func waitRefusal(_ reason: WakeReason) -> APIError {
        let configuration = app.configuration
        if reason == .addressBusy {
            return APIError.tooManyRequests(
                retryAfter: configuration.retryAfter, "Too many waiting requests from this address",
                "\(configuration.maximumWaitersPerAddress) requests from this source address (or 4 and 16 times as many from its IPv6 /56 and /48) are waiting already; retry after the Retry-After seconds, with jitter"
            )
        }
        return APIError.overloaded(
            retryAfter: configuration.retryAfter,
            "\(configuration.maximumWaiters) requests are waiting already; retry after the Retry-After seconds, with jitter"
        )
    }

    /// The snapshot, or the delta to it from the version a request holds when it accepts deltas and one is kept
    /// (and smaller); counted, for requests that accept deltas.
    ///
    /// - Parameter deltaBase: the version the request holds when it accepts deltas (of the snapshot's epoch).
    func answer(_ snapshot: PublishedSnapshot, deltaBase: Int64?, gzip: Bool) -> SnapshotOutcome {
        guard let deltaBase else { return .ok(snapshot, gzip: gzip) }
        switch snapshot.deltaAnswer(from: deltaBase) {
        case .delta(let delta):
            app.hub.countAnswer(delta: true)
            return .delta(delta, gzip: gzip)
        case .full:
            app.hub.countAnswer(delta: false)
            return .ok(snapshot, gzip: gzip)
        }
    }

    /// A snapshot response: its headers and body are built once per version (`PublishedSnapshot`), a delta's once
    /// per version and base (`PublishedDelta`).
    enum SnapshotOutcome {
        /// 200 with the snapshot, gzip-encoded when accepted.
        case ok(PublishedSnapshot, gzip: Bool)
        /// 200 with a delta to the snapshot, gzip-encoded when accepted.
        case delta(PublishedDelta, gzip: Bool)
        /// 304 with the snapshot's tag.
        case notModified(PublishedSnapshot)

        var reply: Reply {
            switch self {
            case .ok(let snapshot, gzip: false):
                return Reply(status: .ok, headers: snapshot.identityHeaders, body: snapshot.body)
            case .ok(let snapshot, gzip: true):
                let (body, headers) = snapshot.gzipped
                return Reply(status: .ok, headers: headers, body: body)
            case .delta(let delta, gzip: false):
                return Reply(status: .ok, headers: delta.identityHeaders, body: delta.body)
            case .delta(let delta, gzip: true):
                return Reply(status: .ok, headers: delta.gzipHeaders, body: delta.gzipBody)
            case .notModified(let snapshot):
                return Reply(status: .notModified, headers: snapshot.notModifiedHeaders, body: nil)
            }
        }
    }

    /// `GET /v1/namespaces/{namespace}/changes?after=&wait=&limit=`: the change log after a version, long-polled.
    func changes(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let namespace = try parameter("namespace", context)
        let token = try await auth.authorize(request, role: .client, namespace: namespace)
        let after = try queryInteger(request, "after", default: 0, in: 0...Int64.max)!
        let limit = try queryInteger(request, "limit", default: 100, in: 1...1000)!
        let wait = try waitSeconds(request)
        guard var current = app.hub.snapshot(of: namespace) else { throw APIError.namespaceNotFound(namespace) }
        if let wait, wait > 0, current.version <= after {
            let address = app.sourceAddress(of: request, context: context)
            let spent = try spendLongPollBudgets(token: token, address: address)
            let reason = await app.hub.wait(
                for: namespace, after: SnapshotVersion(epoch: current.epoch, version: after),
                timeout: .seconds(wait), address: address)
            refundLongPoll(spent, if: reason)
            switch reason {
            case .gone: throw APIError.namespaceNotFound(namespace)
            case .overloaded, .addressBusy: throw waitRefusal(reason)
            default: break
            }
            guard let latest = app.hub.snapshot(of: namespace) else { throw APIError.namespaceNotFound(namespace) }
            current = latest
        }
        let records = try await store.changes(in: namespace, after: after, limit: Int(limit))
        var headers = HTTPFields()
        headers[.eTag] = current.entityTag
        // A client token is public, a reporter's reads no flags: both read what snapshots show (View.clientChange);
        // editors everything.
        let changes: ChangePageBody.Changes =
            token.role < .editor ? .client(records.map(View.clientChange)) : .full(records.map(View.changeBody))
        return .json(
            ChangePageBody(
                namespace: namespace, epoch: current.epoch, version: current.version, changes: changes,
                nextAfter: records.last?.version ?? after
            ).json, headers: headers)
    }

    /// `GET /v1/namespaces/{namespace}/changes/{version}`: one change log entry.
    func change(_ request: Request, context: FlagsRequestContext) async throws -> Response {
        let namespace = try parameter("namespace", context)
        let token = try await auth.authorize(request, role: .client, namespace: namespace)
        let version = try versionParameter(context)
        guard let record = try await store.change(in: namespace, version: version) else {
            guard app.hub.snapshot(of: namespace) != nil else { throw APIError.namespaceNotFound(namespace) }
            throw APIError.notFound("namespace '\(namespace)' has no change with version \(version)")
        }
        return .json(token.role < .editor ? View.clientChange(record).json : View.change(record))
    }

    func versionParameter(_ context: FlagsRequestContext) throws -> Int64 {
        let text = try parameter("version", context)
        guard let version = Int64(text), version >= 1 else {
            throw APIError.badRequest("'\(text)' is not a version (a whole number from 1)", path: "version")
        }
        return version
    }
}

extension APIError {
    static func namespaceNotFound(_ namespace: String) -> APIError {
        .notFound("namespace '\(namespace)' does not exist (list namespaces with GET /v1/namespaces)")
    }
}

/// The entity tags of an `If-None-Match` header, compared weakly as HTTP says for it.
struct EntityTagList: Equatable {
    private(set) var any = false
    private(set) var tags: [SnapshotVersion] = []
    private(set) var opaque: [String] = []

    init(_ header: String?) {
        guard let header else {
            self.init(general: "")
            return
        }
        if header.utf8.allSatisfy({ $0 < 0x80 }) {
            self.init(ascii: header)
        } else {
            self.init(general: header)
        }
    }

    /// Any header: parts split at commas, trimmed as Foundation trims whitespace, read as `SnapshotVersion`s.
    init(general header: String) {
        for part in header.split(separator: ",") {
            add(Self.trimmingWhitespace(part))
        }
    }

    /// An ASCII header (as they are), split and trimmed the same way on its bytes: every poll reads this header.
    init(ascii header: String) {
        let bytes = header.utf8
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: ",")) ?? bytes.endIndex
            if start < end {  // `split` leaves out empty parts
                add(Self.trimmingWhitespace(header[start..<end]))
            }
            start = end == bytes.endIndex ? end : bytes.index(after: end)
        }
    }

    private mutating func add(_ part: String) {
        if part == "*" {
            any = true
        } else if let tag = SnapshotVersion(entityTag: part) {
            tags.append(tag)
        } else {
            opaque.append(part)
        }
    }

    /// Whether a tag names the current position, by weak comparison (`W/` ignored): the tag is the position's
    /// `"<epoch>.<version>"`.
    func matches(_ position: SnapshotVersion) -> Bool {
        any || tags.contains { $0.epoch == position.epoch && $0.version == position.version }
    }

    /// `trimmingCharacters(in: .whitespaces)`, without Foundation when the text is ASCII (as header values are),
    /// where that set is space and tab: every poll reads this header.
    static func trimmingWhitespace(_ text: Substring) -> String {
        let bytes = text.utf8
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return text.trimmingCharacters(in: .whitespaces) }
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start = bytes.index(after: start) }
        while end > start, bytes[bytes.index(before: end)] == 0x20 || bytes[bytes.index(before: end)] == 0x09 {
            end = bytes.index(before: end)
        }
        return String(text[start..<end])
    }

    /// The version a delta starts from: the highest version named for the current epoch below the current one;
    /// nil when none is (another epoch, `*`, or only opaque tags).
    func deltaBase(current: SnapshotVersion) -> Int64? {
        tags.filter { $0.epoch == current.epoch && $0.version < current.version }.map(\.version).max()
    }

    /// The position to wait past: the highest version named for the current epoch when it is at or above the
    /// current version (`*` names the current one); nil when the request must be answered at once.
    func waitPosition(current: SnapshotVersion) -> SnapshotVersion? {
        var highest: Int64? = any ? current.version : nil
        for tag in tags where tag.epoch == current.epoch {
            highest = max(highest ?? tag.version, tag.version)
        }
        guard let highest, highest >= current.version else { return nil }
        return SnapshotVersion(epoch: current.epoch, version: highest)
    }
}

/// Whether an `Accept-Encoding` header accepts gzip (`gzip` or `*` with a non-zero quality).
struct AcceptEncoding {
    let acceptsGzip: Bool

    init(_ header: String?) {
        // Fast path for the common `gzip`, `gzip, deflate, br` (no quality values): every request reads this.
        if let header, !header.utf8.contains(UInt8(ascii: ";")) {
            acceptsGzip = header.utf8.split(separator: UInt8(ascii: ",")).contains { coding in
                let trimmed = coding.drop { $0 == 0x20 }.reversed().drop { $0 == 0x20 }
                let lowered = trimmed.reversed().map { $0 | 0x20 }
                return lowered.elementsEqual("gzip".utf8) || lowered.elementsEqual("x-gzip".utf8)
                    || lowered.elementsEqual("*".utf8)
            }
            return
        }
        var gzip: Bool?
        var wildcard: Bool?
        for part in (header ?? "").split(separator: ",") {
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let coding = pieces.first else { continue }
            var accepted = true
            for parameter in pieces.dropFirst() where parameter.hasPrefix("q=") {
                accepted = (Double(parameter.dropFirst(2)) ?? 1) > 0
            }
            if coding == "gzip" || coding == "x-gzip" { gzip = accepted }
            if coding == "*" { wildcard = accepted }
        }
        acceptsGzip = gzip ?? wildcard ?? false
    }
}

/// Whether an `Accept` header names the delta media type (`application/vnd.switchyard.snapshot-delta+json`) with
/// a non-zero quality. Only then may a snapshot request be answered with a delta: a client that does not say so
/// (every client before deltas) always gets the full snapshot.
struct AcceptsDelta {
    let accepted: Bool

    private static let type = Array(SnapshotDelta.mediaType.utf8)

    init(_ header: String?) {
        guard var header else {
            accepted = false
            return
        }
        accepted = header.withUTF8 { Self.accepts($0) }
    }

    /// Reads the header's bytes without allocating (every poll of a client that takes deltas names the type):
    /// comma-separated media ranges, each with `;`-separated parameters, optional whitespace around each, compared
    /// without regard to ASCII case. A `q` of zero (`0`, `0.0`, …) or below refuses; a malformed one does not.
    private static func accepts(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var accepted = false
        var elementStart = 0
        while elementStart <= bytes.count {
            let elementEnd = end(of: UInt8(ascii: ","), in: bytes, from: elementStart, to: bytes.count)
            let rangeEnd = end(of: UInt8(ascii: ";"), in: bytes, from: elementStart, to: elementEnd)
            if isType(bytes, trimmed(bytes, elementStart, rangeEnd)) {
                accepted = true
                var parameterStart = rangeEnd + 1
                while parameterStart < elementEnd {
                    let parameterEnd = end(of: UInt8(ascii: ";"), in: bytes, from: parameterStart, to: elementEnd)
                    let (start, end) = trimmed(bytes, parameterStart, parameterEnd)
                    if end - start >= 2, bytes[start] | 0x20 == UInt8(ascii: "q"), bytes[start + 1] == UInt8(ascii: "=")
                    {
                        accepted = !isZeroOrBelow(bytes, start + 2, end)
                    }
                    parameterStart = parameterEnd + 1
                }
            }
            elementStart = elementEnd + 1
        }
        return accepted
    }

    /// The position of the first `separator` in `start..<limit`, or `limit`.
    private static func end(of separator: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to limit: Int)
        -> Int
    {
        var position = start
        while position < limit, bytes[position] != separator { position += 1 }
        return position
    }

    /// `start..<end` without the spaces and tabs around it.
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> (Int, Int) {
        var (start, end) = (start, end)
        while start < end, bytes[start] == UInt8(ascii: " ") || bytes[start] == UInt8(ascii: "\t") { start += 1 }
        while end > start, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") { end -= 1 }
        return (start, end)
    }

    private static func isType(_ bytes: UnsafeBufferPointer<UInt8>, _ range: (Int, Int)) -> Bool {
        guard range.1 - range.0 == type.count else { return false }
        for offset in 0..<type.count {
            let byte = bytes[range.0 + offset]
            guard (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) == type[offset] else { return false }
        }
        return true
    }

    /// Whether a quality value is zero (digits all `0`, at most one `.`) or negative.
    private static func isZeroOrBelow(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Bool {
        guard start < end else { return false }
        if bytes[start] == UInt8(ascii: "-") { return true }
        var zeros = 0
        var points = 0
        for position in start..<end {
            switch bytes[position] {
            case UInt8(ascii: "0"): zeros += 1
            case UInt8(ascii: "."): points += 1
            default: return false
            }
        }
        return zeros > 0 && points <= 1
    }
}
