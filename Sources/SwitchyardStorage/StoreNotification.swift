import SwitchyardCore

/// A write that some flagsd process committed to a store that several processes share.
///
/// A shared store (PostgreSQL) sends one to every process after each commit, including the process that made
/// the write, so each can wake its own long-poll waiters and reload its token cache. Notifications are hints:
/// a receiver reads the current state from the store, never trusts a notification's content as that state.
public enum StoreNotification: Sendable, Hashable {
    /// A namespace was created, changed or deleted; `version` is the version it took (the last one before a
    /// deletion). Reload the namespace unless the version held is this one or newer, of the same epoch.
    case namespace(name: String, epoch: String, version: Int64, deleted: Bool)
    /// A token was created or revoked: reload the tokens.
    case tokens
    /// Notifications may have been missed (the store connected, or reconnected after losing the database):
    /// compare every namespace with what is held, and reload the tokens.
    case resync
}

extension StoreNotification {
    /// The notification as compact JSON text (the payload a backend sends; PostgreSQL caps it at 8000 bytes,
    /// far above what a namespace name needs).
    package var payload: String {
        switch self {
        case .namespace(let name, let epoch, let version, let deleted):
            JSONValue.object(
                JSONObject([
                    ("namespace", .string(name)), ("epoch", .string(epoch)), ("version", .int64(version)),
                    ("deleted", .bool(deleted)),
                ])
            ).serializedString(.canonical)
        case .tokens:
            #"{"tokens":true}"#
        case .resync:
            #"{"resync":true}"#
        }
    }

    /// Reads what `payload` wrote; nil for anything else (a receiver then resyncs).
    package init?(payload: String) {
        guard let tree = try? JSONValue.parse(payload) else { return nil }
        if let name = tree["namespace"]?.stringValue, let epoch = tree["epoch"]?.stringValue,
            let version = tree["version"]?.int64Value
        {
            self = .namespace(name: name, epoch: epoch, version: version, deleted: tree["deleted"] == .bool(true))
        } else if tree["tokens"] == .bool(true) {
            self = .tokens
        } else if tree["resync"] == .bool(true) {
            self = .resync
        } else {
            return nil
        }
    }
}
