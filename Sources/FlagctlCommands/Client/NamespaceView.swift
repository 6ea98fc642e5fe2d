import Foundation
import SwitchyardCore
import SwitchyardWire

/// A namespace as flagctl read it: its flag set at one version, and the settings that decide what a change needs.
struct NamespaceView: Sendable {
    var namespace: String
    var epoch: String
    var version: Int64
    /// The entity tag of this version (`"<epoch>.<version>"`), sent as `If-Match` with a change based on it.
    var etag: String
    /// The namespace's reason policy (`kills` when the server names none this flagctl knows).
    var reasonPolicy: ReasonPolicy
    var flagSet: FlagSet
}

/// One entry of a namespace's change log, as flagsd sends it.
typealias ChangeEntry = ChangeEntryBody

extension ChangeEntryBody {
    /// `version 14 by bob (cli) at 2026-11-22T10:02:11.000Z: disable plugin_switch_feed_promos`
    var line: String {
        "version \(version) by \(actor) (\(source)) at \(time): \(summary)" + (reason.map { " (reason: \($0))" } ?? "")
    }
}

extension APIClient {
    /// Reads a namespace: its settings and its flag set.
    ///
    /// - Throws: `CommandFailure.notFound` naming the namespace and how to list them; `APIFailure` otherwise.
    func namespaceView(_ namespace: String) async throws -> NamespaceView {
        let record: NamespaceBody
        let document: FlagSetBody
        do {
            record = try NamespaceBody(json: try await get(Self.path("v1", "namespaces", namespace)))
            document = try FlagSetBody(json: try await get(Self.path("v1", "namespaces", namespace, "flag-set")))
        } catch let failure as APIFailure where failure.status == 404 {
            throw namespaceNotFound(namespace)
        }
        var flagSet = document.flagSet
        // The API's documents have sorted keys; show the master kill switch first, as flag files do.
        flagSet.killSwitches.sort { $0.isMaster && !$1.isMaster }
        return NamespaceView(
            namespace: namespace, epoch: document.version.epoch, version: document.version.version,
            etag: document.version.entityTag, reasonPolicy: record.reasonPolicy, flagSet: flagSet)
    }

    /// The change log entries after a version, oldest first (at most 1000).
    func changes(_ namespace: String, after version: Int64, limit: Int = 1000) async throws -> [ChangeEntry] {
        let tree = try await get(
            Self.path("v1", "namespaces", namespace, "changes"),
            query: [("after", String(version)), ("limit", String(limit))])
        guard case .full(let entries) = try ChangePageBody(json: tree).changes else {
            throw CommandFailure("this token reads the change log without who made each change; use an editor's token")
        }
        return entries
    }

    /// A 404 for a namespace, saying how to find the right one.
    func namespaceNotFound(_ namespace: String) -> CommandFailure {
        .notFound(
            "namespace '\(namespace)' does not exist on \(settings.serverText); 'flagctl namespaces list' shows the namespaces your token may use"
        )
    }
}

extension FlagSet {
    /// The flag with a key, or a not-found failure suggesting the nearest keys.
    func requireFlag(_ key: String, server: String) throws(CommandFailure) -> FlagDefinition {
        guard let flag = flag(key) else {
            throw CommandFailure.notFound(
                "namespace '\(namespace)' has no flag '\(key)'\(Suggestions.didYouMean(key, among: flags.map(\.key)))"
                    + "; 'flagctl get' lists its flags")
        }
        return flag
    }

    /// The plugin switch with a key, or a failure saying why not.
    func requireSwitch(_ key: String, server: String, for operation: String) throws(CommandFailure)
        -> PluginSwitchDefinition
    {
        let flag = try requireFlag(key, server: server)
        guard let gate = flag.pluginSwitch else {
            throw CommandFailure(
                "'\(key)' is an experiment flag; \(operation) applies to plugin switches. Experiments are turned off with a kill switch ('flagctl kill') and shaped by their weights (edit the flag file and 'flagctl apply')"
            )
        }
        return gate
    }

    /// The kill switch with a key, or a not-found failure listing them.
    func requireKillSwitch(_ key: String) throws(CommandFailure) -> KillSwitch {
        guard let kill = killSwitch(key) else {
            let known = killSwitches.map(\.key).joined(separator: ", ")
            throw CommandFailure.notFound(
                "namespace '\(namespace)' has no kill switch '\(key)'\(Suggestions.didYouMean(key, among: killSwitches.map(\.key))); its kill switches: \(known)"
            )
        }
        return kill
    }
}
