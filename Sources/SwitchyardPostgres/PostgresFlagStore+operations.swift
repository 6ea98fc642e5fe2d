import Foundation
import Logging
import PostgresNIO
public import SwitchyardCore
public import SwitchyardStorage
import SwitchyardWire

/// The `FlagStore` operations, in the same shape as `SQLiteFlagStore`'s: one transaction per invariant (the
/// change, the version bump, the change log and audit rows and the notification commit together).
extension PostgresFlagStore {
    // MARK: Namespaces

    public func namespaces() async throws -> [NamespaceRecord] {
        try await rows(
            """
            SELECT epoch, name, version, reason_policy, created_ms, updated_ms FROM namespace
            WHERE deleted_ms IS NULL ORDER BY name
            """
        ).map { try Self.namespaceRecord($0.makeRandomAccess()) }
    }

    public func namespace(_ name: String) async throws -> NamespaceState? {
        guard
            let row = try await rows(
                """
                SELECT epoch, name, version, reason_policy, created_ms, updated_ms FROM namespace
                WHERE name = \(name) AND deleted_ms IS NULL
                """
            ).first
        else { return nil }
        return try await state(row.makeRandomAccess(), on: nil)
    }

    public func createNamespace(_ flagSet: FlagSet, reasonPolicy: ReasonPolicy, request: ChangeRequest) async throws
        -> CommittedChange
    {
        let time = currentTime()
        let epoch = makeEpoch()
        do {
            let result = try await transaction { connection in
                if try await Self.liveNamespaceRow(connection, flagSet.namespace, lock: true, logger: self.logger)
                    != nil
                {
                    throw NamespaceStep.alreadyExists(flagSet.namespace)
                }
                let (state, record) = try NamespaceStep.creating(
                    flagSet, reasonPolicy: reasonPolicy, request: request, epoch: epoch, at: time)
                _ = try await connection.query(
                    """
                    INSERT INTO namespace (epoch, name, version, reason_policy, created_ms, updated_ms)
                    VALUES (\(epoch), \(flagSet.namespace), 1, \(reasonPolicy.rawValue), \(time.milliseconds), \(time.milliseconds))
                    """, logger: self.logger
                ).collect()
                var writes = StoredObjectWrites()
                writes.upserts = state.flagSet.storedObjects
                try await Self.write(writes, epoch: epoch, to: connection, logger: self.logger)
                try await Self.append(record, action: .namespaceCreate, to: connection, logger: self.logger)
                try await Self.notify(
                    .namespace(name: flagSet.namespace, epoch: epoch, version: 1, deleted: false), on: connection,
                    logger: self.logger)
                return CommittedChange(state: state, record: record)
            }
            remember(result.state)
            return result
        } catch let error as StorageError where error.kind == .alreadyExists {
            // Also when another process created the namespace between the check and the insert.
            throw NamespaceStep.alreadyExists(flagSet.namespace)
        }
    }

    public func setReasonPolicy(_ policy: ReasonPolicy, of namespace: String, by author: ChangeAuthor) async throws -> (
        record: NamespaceRecord, changed: Bool
    ) {
        let time = currentTime()
        return try await transaction { connection in
            guard let row = try await Self.liveNamespaceRow(connection, namespace, lock: true, logger: self.logger)
            else {
                throw StorageError.namespaceNotFound(namespace)
            }
            var record = try Self.namespaceRecord(row)
            guard record.reasonPolicy != policy else { return (record, false) }
            _ = try await connection.query(
                """
                UPDATE namespace SET reason_policy = \(policy.rawValue), updated_ms = \(time.milliseconds) WHERE epoch = \(record.epoch)
                """, logger: self.logger
            ).collect()
            let note = NamespaceStep.settingReasonPolicy(of: record, to: policy)
            try await Self.appendAudit(
                time: time, author: author, action: .namespaceUpdate, namespace: namespace, version: nil,
                summary: note.summary, changes: note.changes, targets: [], to: connection, logger: self.logger)
            record.reasonPolicy = policy
            record.updatedAt = time
            return (record, true)
        }
    }

    public func deleteNamespace(_ name: String, by author: ChangeAuthor) async throws {
        let time = currentTime()
        try await transaction { connection in
            guard let row = try await Self.liveNamespaceRow(connection, name, lock: true, logger: self.logger) else {
                throw StorageError.namespaceNotFound(name)
            }
            let state = try await self.state(row, on: connection)
            _ = try await connection.query(
                """
                UPDATE namespace SET deleted_ms = \(time.milliseconds) WHERE epoch = \(state.record.epoch)
                """, logger: self.logger
            ).collect()
            let note = NamespaceStep.deleting(state)
            try await Self.appendAudit(
                time: time, author: author, action: .namespaceDelete, namespace: name,
                version: state.record.version, summary: note.summary, changes: note.changes,
                targets: [], to: connection, logger: self.logger)
            try await Self.notify(
                .namespace(name: name, epoch: state.record.epoch, version: state.record.version, deleted: true),
                on: connection, logger: self.logger)
        }
    }

    // MARK: Changes

    public func change(
        _ namespace: String, _ request: ChangeRequest, mutation: @escaping @Sendable (FlagSet) throws -> FlagSet
    ) async throws -> CommittedChange {
        let time = currentTime()
        let result = try await transaction(publishing: namespace) { connection, commits in
            // The row lock serialises changes to this namespace across every process until the commit.
            guard let row = try await Self.liveNamespaceRow(connection, namespace, lock: true, logger: self.logger)
            else {
                throw StorageError.namespaceNotFound(namespace)
            }
            let state = try await self.state(row, on: connection)
            switch try ChangeStep.decide(state, request, at: time, mutation: mutation) {
            case .conflict(let basedOn):
                throw try await Self.conflict(connection, current: state.record, basedOn: basedOn, logger: self.logger)
            case .unchanged:
                return CommittedChange(state: state, record: nil)
            case .commit(let next, let record):
                _ = try await connection.query(
                    """
                    UPDATE namespace SET version = \(record.version), updated_ms = \(time.milliseconds) WHERE epoch = \(record.epoch)
                    """, logger: self.logger
                ).collect()
                try await Self.write(
                    record.storedWrites(after: next.flagSet), epoch: record.epoch, to: connection, logger: self.logger)
                try await Self.append(record, action: .change, to: connection, logger: self.logger)
                try await Self.notify(
                    .namespace(name: namespace, epoch: record.epoch, version: record.version, deleted: false),
                    on: connection, logger: self.logger)
                commits(record.epoch, record.version)
                return CommittedChange(state: next, record: record)
            }
        }
        if result.changed { remember(result.state) }
        return result
    }

    public func changes(in namespace: String, after version: Int64, limit: Int) async throws -> [ChangeRecord] {
        let rows = try await rows(
            """
            SELECT n.epoch, c.version, c.time_ms, c.actor, c.source, c.reason, c.summary, c.changes, c.evidence
            FROM namespace n LEFT JOIN change c ON c.epoch = n.epoch AND c.version > \(version)
            WHERE n.name = \(namespace) AND n.deleted_ms IS NULL
            ORDER BY c.version LIMIT \(max(0, limit) + 1)
            """)
        guard !rows.isEmpty else { throw StorageError.namespaceNotFound(namespace) }
        return try rows.prefix(max(0, limit)).compactMap { row in
            let row = row.makeRandomAccess()
            guard try row["version"].decode(Int64?.self) != nil else { return nil }
            return try Self.changeRecord(row, namespace: namespace)
        }
    }

    public func audit(_ query: AuditQuery) async throws -> AuditPage {
        var bindings = PostgresBindings()
        let sql = query.pageSQL { value in
            switch value {
            case .text(let text): bindings.append(text)
            case .integer(let integer): bindings.append(integer)
            case .texts(let texts):
                bindings.append(texts)
                return "(SELECT unnest($\(bindings.count)::text[]))"
            }
            return "$\(bindings.count)"
        }
        let entries = try await rows(PostgresQuery(unsafeSQL: sql, binds: bindings)).map {
            try Self.auditEntry($0.makeRandomAccess())
        }
        return AuditPage(fetched: entries, pageSize: query.pageSize)
    }

    public func recordAudit(_ note: AuditNote) async throws -> AuditEntry {
        let time = currentTime()
        return try await transaction { connection in
            guard try await Self.liveNamespaceRow(connection, note.namespace, lock: false, logger: self.logger) != nil
            else {
                throw StorageError.namespaceNotFound(note.namespace)
            }
            let id = try await Self.appendAudit(
                time: time, author: note.author, action: note.action, namespace: note.namespace,
                version: nil, summary: note.summary, changes: [], targets: note.targets,
                evidence: note.evidence.map { $0.serializedString(.canonical) }, to: connection,
                logger: self.logger)
            guard
                let row = try await connection.query("SELECT * FROM audit WHERE id = \(id)", logger: self.logger)
                    .collect().first
            else {
                throw StorageError(.corrupt, "the audit entry just written is missing")
            }
            return try Self.auditEntry(row.makeRandomAccess())
        }
    }

    // MARK: Tokens

    public func tokens() async throws -> [StoredToken] {
        try await rows("SELECT * FROM token ORDER BY created_ms, id").map {
            try Self.storedToken($0.makeRandomAccess())
        }
    }

    public func createToken(_ token: StoredToken, by author: ChangeAuthor) async throws {
        let time = currentTime()
        let record = token.record
        let duplicate = StorageError(
            .alreadyExists,
            "a live token is named '\(record.name)' already (choose another name, or revoke that one first)")
        do {
            try await transaction { connection in
                if try await connection.query(
                    "SELECT 1 FROM token WHERE name = \(record.name) AND revoked_ms IS NULL",
                    logger: self.logger
                ).collect().first != nil {
                    throw duplicate
                }
                let namespaces = record.namespaces.map { JSONValue.array($0.map(JSONValue.string)).serializedString() }
                let rate = record.ratePerMinute.map(Int32.init(clamping:))
                _ = try await connection.query(
                    """
                    INSERT INTO token (id, name, role, namespaces, rate_per_minute, secret_hash, created_ms, created_by)
                    VALUES (\(record.id), \(record.name), \(record.role.rawValue), \(namespaces), \(rate),
                            \(ByteBuffer(bytes: token.secretHash)), \(record.createdAt.milliseconds), \(record.createdBy))
                    """, logger: self.logger
                ).collect()
                let scope = record.namespaces.map { " for namespaces \($0.joined(separator: ", "))" } ?? ""
                try await Self.appendAudit(
                    time: time, author: author, action: .tokenCreate, namespace: nil, version: nil,
                    summary: "created \(record.role) token \(record.name) (\(record.id))\(scope)",
                    changes: [ObjectChange(kind: .namespace, key: "token", before: nil, after: record.tree)],
                    targets: [record.name, record.id], to: connection, logger: self.logger)
                try await Self.notify(.tokens, on: connection, logger: self.logger)
            }
        } catch let error as StorageError where error.kind == .alreadyExists {
            // Also when another process created a live token of that name between the check and the insert.
            throw duplicate
        }
    }

    public func revokeToken(_ idOrName: String, by author: ChangeAuthor) async throws -> TokenRecord {
        let time = currentTime()
        return try await transaction { connection in
            // The live unrestricted admin tokens first, always in one order, so that two revocations at once wait
            // for each other (instead of deadlocking) and the second sees the first one's result.
            let admins = try await connection.query(
                """
                SELECT id FROM token WHERE role = 'admin' AND namespaces IS NULL AND revoked_ms IS NULL ORDER BY id FOR UPDATE
                """, logger: self.logger
            ).collect().map { try $0.decode(String.self) }
            var row = try await connection.query(
                "SELECT * FROM token WHERE id = \(idOrName) FOR UPDATE", logger: self.logger
            ).collect().first
            if row == nil {
                row = try await connection.query(
                    "SELECT * FROM token WHERE name = \(idOrName) AND revoked_ms IS NULL FOR UPDATE",
                    logger: self.logger
                ).collect().first
            }
            guard let row else {
                throw StorageError(
                    .notFound, "no token has the id or live name '\(idOrName)' (list tokens with GET /v1/tokens)")
            }
            var record = try Self.storedToken(row.makeRandomAccess()).record
            guard record.revokedAt == nil else { return record }
            if record.role == .admin, record.namespaces == nil, !admins.contains(where: { $0 != record.id }) {
                throw StorageError.lastAdminToken(named: record.name)
            }
            _ = try await connection.query(
                "UPDATE token SET revoked_ms = \(time.milliseconds) WHERE id = \(record.id)",
                logger: self.logger
            ).collect()
            let before = record.tree
            record.revokedAt = Date(milliseconds: time.milliseconds)
            try await Self.appendAudit(
                time: time, author: author, action: .tokenRevoke, namespace: nil, version: nil,
                summary: "revoked token \(record.name) (\(record.id))",
                changes: [ObjectChange(kind: .namespace, key: "token", before: before, after: record.tree)],
                targets: [record.name, record.id], to: connection, logger: self.logger)
            try await Self.notify(.tokens, on: connection, logger: self.logger)
            return record
        }
    }

    public func checkHealth() async throws {
        _ = try await rows("SELECT 1")
    }

    // MARK: Rows

    /// A namespace state from its row, reusing the flag set read for the same epoch and version; otherwise its
    /// objects' rows are read, with the namespace's row again in the same statement (one snapshot of the database:
    /// outside a transaction, a change may have committed since the first read).
    ///
    /// - Parameter connection: the transaction's connection, or nil for any of the pool's.
    func state(_ row: PostgresRandomAccessRow, on connection: PostgresConnection?) async throws -> NamespaceState {
        let record = try Self.namespaceRecord(row)
        if let flagSet = cachedFlagSet(epoch: record.epoch, version: record.version) {
            return NamespaceState(record: record, flagSet: flagSet)
        }
        let query: PostgresQuery = """
            SELECT n.epoch, n.name, n.version, n.reason_policy, n.created_ms, n.updated_ms, o.kind, o.key, o.position, o.body
            FROM namespace n JOIN namespace_object o ON o.epoch = n.epoch WHERE n.epoch = \(record.epoch)
            """
        let rows: [PostgresRow]
        if let connection {
            rows = try await connection.query(query, logger: logger).collect()
        } else {
            rows = try await self.rows(query)
        }
        guard let first = rows.first?.makeRandomAccess() else {
            throw StorageError(
                .corrupt, "namespace '\(record.name)' has no stored objects (not even its master kill switch)")
        }
        let objects = try rows.map { row in
            let row = row.makeRandomAccess()
            return StoredObject(
                kind: try row["kind"].decode(String.self), key: try row["key"].decode(String.self),
                position: try row["position"].decode(Int64.self), body: try row["body"].decode(String.self))
        }
        let read = try Self.namespaceRecord(first)
        let state = NamespaceState(record: read, flagSet: try FlagSet(storedObjects: objects, namespace: read.name))
        remember(state)
        return state
    }

    /// Writes what a change touched: its objects' rows (in one statement however many), and nothing else.
    static func write(_ writes: StoredObjectWrites, epoch: String, to connection: PostgresConnection, logger: Logger)
        async throws
    {
        for kind in writes.replacedKinds {
            _ = try await connection.query(
                "DELETE FROM namespace_object WHERE epoch = \(epoch) AND kind = \(kind)", logger: logger
            ).collect()
        }
        if !writes.deletions.isEmpty {
            _ = try await connection.query(
                """
                DELETE FROM namespace_object WHERE epoch = \(epoch)
                AND (kind, key) IN (SELECT * FROM unnest(\(writes.deletions.map(\.kind))::text[], \(writes.deletions.map(\.key))::text[]))
                """, logger: logger
            ).collect()
        }
        guard !writes.upserts.isEmpty else { return }
        _ = try await connection.query(
            """
            INSERT INTO namespace_object (epoch, kind, key, position, body)
            SELECT \(epoch), * FROM unnest(\(writes.upserts.map(\.kind))::text[], \(writes.upserts.map(\.key))::text[],
                                           \(writes.upserts.map(\.position))::bigint[], \(writes.upserts.map(\.body))::text[])
            ON CONFLICT (epoch, kind, key) DO UPDATE SET position = EXCLUDED.position, body = EXCLUDED.body
            """, logger: logger
        ).collect()
    }

    /// The live namespace of a name, locked for the transaction when `lock` is set.
    static func liveNamespaceRow(_ connection: PostgresConnection, _ name: String, lock: Bool, logger: Logger)
        async throws -> PostgresRandomAccessRow?
    {
        let query: PostgresQuery =
            lock
            ? "SELECT * FROM namespace WHERE name = \(name) AND deleted_ms IS NULL FOR UPDATE"
            : "SELECT * FROM namespace WHERE name = \(name) AND deleted_ms IS NULL"
        return try await connection.query(query, logger: logger).collect().first?.makeRandomAccess()
    }

    static func namespaceRecord(_ row: PostgresRandomAccessRow) throws -> NamespaceRecord {
        let name = try row["name"].decode(String.self)
        let policyText = try row["reason_policy"].decode(String.self)
        guard let policy = ReasonPolicy(rawValue: policyText) else {
            throw StorageError(.corrupt, "namespace '\(name)' has an unknown reason policy '\(policyText)'")
        }
        return NamespaceRecord(
            name: name, epoch: try row["epoch"].decode(String.self), version: try row["version"].decode(Int64.self),
            reasonPolicy: policy, createdAt: Date(milliseconds: try row["created_ms"].decode(Int64.self)),
            updatedAt: Date(milliseconds: try row["updated_ms"].decode(Int64.self)))
    }

    static func changeRecord(_ row: PostgresRandomAccessRow, namespace: String) throws -> ChangeRecord {
        ChangeRecord(
            namespace: namespace, epoch: try row["epoch"].decode(String.self),
            version: try row["version"].decode(Int64.self),
            time: Date(milliseconds: try row["time_ms"].decode(Int64.self)),
            actor: try row["actor"].decode(String.self),
            source: ChangeSource(rawValue: try row["source"].decode(String.self)),
            reason: try row["reason"].decode(String?.self),
            summary: try row["summary"].decode(String.self),
            changes: try ObjectChange.decodeList(row["changes"].decode(String.self)),
            evidence: try decodeEvidence(row["evidence"].decode(String?.self)))
    }

    /// Reads stored evidence text; nil when there is none.
    static func decodeEvidence(_ text: String?) throws(StorageError) -> JSONValue? {
        guard let text else { return nil }
        guard let value = try? JSONValue.parse(text) else {
            throw StorageError(.corrupt, "stored evidence is not JSON")
        }
        return value
    }

    static func auditEntry(_ row: PostgresRandomAccessRow) throws -> AuditEntry {
        AuditEntry(
            id: try row["id"].decode(Int64.self), time: Date(milliseconds: try row["time_ms"].decode(Int64.self)),
            actor: try row["actor"].decode(String.self),
            source: ChangeSource(rawValue: try row["source"].decode(String.self)),
            action: AuditAction(rawValue: try row["action"].decode(String.self)),
            namespace: try row["namespace"].decode(String?.self),
            version: try row["version"].decode(Int64?.self), reason: try row["reason"].decode(String?.self),
            summary: try row["summary"].decode(String.self),
            changes: try ObjectChange.decodeList(row["changes"].decode(String.self)),
            evidence: try decodeEvidence(row["evidence"].decode(String?.self)))
    }

    static func storedToken(_ row: PostgresRandomAccessRow) throws -> StoredToken {
        let id = try row["id"].decode(String.self)
        let roleText = try row["role"].decode(String.self)
        guard let role = Role(rawValue: roleText) else {
            throw StorageError(.corrupt, "token \(id) has an unknown role '\(roleText)'")
        }
        var namespaces: [String]?
        if let text = try row["namespaces"].decode(String?.self) {
            namespaces = (try? JSONValue.parse(text))?.arrayValue?.compactMap(\.stringValue)
        }
        let revoked = try row["revoked_ms"].decode(Int64?.self)
        let record = TokenRecord(
            id: id, name: try row["name"].decode(String.self), role: role, namespaces: namespaces,
            ratePerMinute: try row["rate_per_minute"].decode(Int32?.self).map(Int.init),
            createdAt: Date(milliseconds: try row["created_ms"].decode(Int64.self)),
            createdBy: try row["created_by"].decode(String.self),
            revokedAt: revoked.map(Date.init(milliseconds:)))
        let hash = try row["secret_hash"].decode(ByteBuffer.self)
        return StoredToken(record: record, secretHash: Array(hash.readableBytesView))
    }

    static func conflict(
        _ connection: PostgresConnection, current: NamespaceRecord, basedOn: SnapshotVersion, logger: Logger
    ) async throws -> StorageError {
        let last = try await connection.query(
            """
            SELECT actor, time_ms FROM change WHERE epoch = \(current.epoch) AND version = \(current.version)
            """, logger: logger
        ).collect().first?.makeRandomAccess()
        let lastChange = try last.map {
            (actor: try $0["actor"].decode(String.self), time: Date(milliseconds: try $0["time_ms"].decode(Int64.self)))
        }
        return ChangeStep.conflict(current: current, basedOn: basedOn, lastChange: lastChange)
    }

    static func append(_ record: ChangeRecord, action: AuditAction, to connection: PostgresConnection, logger: Logger)
        async throws
    {
        let changes = ObjectChange.encodeList(record.changes)
        let evidence = record.evidence.map { $0.serializedString(.canonical) }
        _ = try await connection.query(
            """
            INSERT INTO change (epoch, version, time_ms, actor, source, reason, summary, changes, evidence)
            VALUES (\(record.epoch), \(record.version), \(record.time.milliseconds), \(record.actor), \(record.source.rawValue),
                    \(record.reason), \(record.summary), \(changes), \(evidence))
            """, logger: logger
        ).collect()
        try await appendAudit(
            time: record.time, author: ChangeAuthor(actor: record.actor, source: record.source, reason: record.reason),
            action: action, namespace: record.namespace, version: record.version, summary: record.summary,
            changes: record.changes, targets: record.auditTargets, evidence: evidence, to: connection, logger: logger)
    }

    @discardableResult
    static func appendAudit(
        time: Date, author: ChangeAuthor, action: AuditAction, namespace: String?, version: Int64?, summary: String,
        changes: [ObjectChange], targets: [String], evidence: String? = nil, to connection: PostgresConnection,
        logger: Logger
    ) async throws -> Int64 {
        let trimmed = author.reason?.trimmingCharacters(in: .whitespacesAndNewlines)
        let reason = trimmed?.isEmpty == false ? trimmed : nil
        let row = try await connection.query(
            """
            INSERT INTO audit (time_ms, actor, source, action, namespace, version, reason, summary, changes, evidence)
            VALUES (\(time.milliseconds), \(author.actor), \(author.source.rawValue), \(action.rawValue), \(namespace), \(version),
                    \(reason), \(summary), \(ObjectChange.encodeList(changes)), \(evidence))
            RETURNING id
            """, logger: logger
        ).collect().first
        let id = try row?.decode(Int64.self) ?? 0
        let unique = Array(Set(targets)).sorted()
        if !unique.isEmpty {
            _ = try await connection.query(
                """
                INSERT INTO audit_target (target, audit_id) SELECT unnest(\(unique)::text[]), \(id)
                """, logger: logger
            ).collect()
        }
        return id
    }

    /// Queues a notification; PostgreSQL delivers it to every listening process when the transaction commits.
    static func notify(_ notification: StoreNotification, on connection: PostgresConnection, logger: Logger)
        async throws
    {
        _ = try await connection.query("SELECT pg_notify(\(channel), \(notification.payload))", logger: logger)
            .collect()
    }
}

extension StorageError {
    static func namespaceNotFound(_ name: String) -> StorageError {
        StorageError(.notFound, "namespace '\(name)' does not exist (list namespaces with GET /v1/namespaces)")
    }
}
