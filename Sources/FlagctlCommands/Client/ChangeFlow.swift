import Foundation
import SwitchyardCore
import SwitchyardWire

/// An object of a flag set that a change edits.
enum ObjectReference: Sendable, Hashable, CustomStringConvertible {
    case flag(String)
    case killSwitch(String)

    var key: String {
        switch self {
        case .flag(let key), .killSwitch(let key): key
        }
    }

    var kind: String {
        switch self {
        case .flag: "flag"
        case .killSwitch: "kill_switch"
        }
    }

    var description: String {
        switch self {
        case .flag(let key): key
        case .killSwitch(let key): "kill switch \(key)"
        }
    }

    /// Whether the object is the same in two flag sets.
    func isUnchanged(from old: FlagSet, to new: FlagSet) -> Bool {
        switch self {
        case .flag(let key): old.flag(key) == new.flag(key)
        case .killSwitch(let key): old.killSwitch(key) == new.killSwitch(key)
        }
    }
}

/// A change worked out against a namespace view: the request, the objects it edits, and how to confirm it.
struct PlannedChange: Sendable {
    var method = "POST"
    var path: String
    /// The body without `reason`; the flow adds it.
    var body = JSONObject()
    /// The objects whose state the change was worked out from. If another change edits one of them first, the
    /// change is refused instead of being applied to a state its author did not see.
    var objects: [ObjectReference]
    /// The change in a few words: `kill kill_home_feed in cities lagos`.
    var action: String
    /// Whether the change adds a kill entry (the `kills` reason policy needs a reason then).
    var addsKillEntry = false
    /// Lines shown before the confirmation question.
    var preview: [String] = []
    /// The question asked on a terminal; derived from `action` when nil.
    var question: String?
    /// When set, the namespace is as asked already: nothing is sent or asked, and this is why.
    var nothingToDo: String?
    /// The rule the service would answer it set, for the answer flagctl gives when nothing is sent.
    var unchangedRule: CommittedBody.EditedRule?
}

/// The outcome of a change: the server's answer and the view it was based on.
struct ChangeOutcome: Sendable {
    /// The server's answer as it came (what -o json and -o yaml print).
    var response: JSONValue
    /// The same answer, read.
    var answer: CommittedBody
    var view: NamespaceView
    /// Why nothing was sent, when the namespace was as asked already.
    var nothingToDo: String?
    var changed: Bool { answer.changed }
    var version: Int64 { answer.version.version }
}

/// The way every flagctl change runs: read the namespace, work the change out against what was read, check
/// the reason policy, confirm, and send it with `If-Match` naming the version read.
///
/// If the namespace moved on in between (HTTP 409), the change is retried only when the objects it edits are
/// unchanged (someone changed another flag); otherwise it fails with exit status 3, naming who changed them
/// and when. With `--if-version` the namespace itself must still be at that version.
struct ChangeFlow {
    let client: APIClient
    let console: Console
    let namespace: String
    let options: ChangeOptions
    /// Whether to ask before changing (kill, revive, apply, namespace deletion).
    var confirms = false

    /// How often a change is worked out again after unrelated changes moved the namespace on.
    static let maximumAttempts = 4

    init(client: APIClient, console: Console, namespace: String, options: ChangeOptions, confirms: Bool = false) {
        self.client = client
        self.console = console
        self.namespace = namespace
        self.options = options
        self.confirms = confirms
    }

    /// The flow of a command's change in the namespace its server options name (`--namespace`, FLAGCTL_NAMESPACE or
    /// the login's).
    init(server: ServerOptions, options: ChangeOptions, console: Console, confirms: Bool = false) throws {
        let (client, namespace) = try server.namespaceClient(console)
        self.init(client: client, console: console, namespace: namespace, options: options, confirms: confirms)
    }

    /// Runs a change.
    ///
    /// - Parameter plan: works the change out from a view; called again on a newer view after an unrelated
    ///   change. Throws to refuse (unknown flag, nothing to do, ...).
    /// - Returns: the server's answer.
    func run(_ plan: (NamespaceView) throws -> PlannedChange) async throws -> ChangeOutcome {
        var view = try await client.namespaceView(namespace)
        if let pinned = options.ifVersion, pinned != view.version {
            throw try await staleView(since: pinned, current: view, objects: nil)
        }
        var planned = try plan(view)
        if planned.nothingToDo != nil {
            // What the service answers a change that alters nothing.
            var unchanged = CommittedBody(
                namespace: view.namespace, version: SnapshotVersion(epoch: view.epoch, version: view.version),
                changed: false, change: nil, rule: planned.unchangedRule)
            for object in planned.objects {
                switch object {
                case .flag(let key):
                    unchanged.flag = view.flagSet.flag(key).map { FlagBody($0, in: view.flagSet) }
                case .killSwitch(let key):
                    unchanged.killSwitch = view.flagSet.killSwitch(key).map { KillSwitchBody($0, in: view.flagSet) }
                }
            }
            return ChangeOutcome(
                response: unchanged.json, answer: unchanged, view: view, nothingToDo: planned.nothingToDo)
        }
        try checkReason(planned, view: view)
        if confirms {
            try await Confirmation.confirm(
                question(planned, view: view), action: planned.action,
                preview: planned.preview, yes: options.yes, console: console)
        }
        for attempt in 1...Self.maximumAttempts {
            var body = planned.body
            if let reason = options.trimmedReason { body["reason"] = .string(reason) }
            do {
                let response = try await client.send(
                    planned.method, planned.path, body: .object(body), ifMatch: view.etag)
                let json = response.json
                return ChangeOutcome(response: json, answer: try Self.answer(json), view: view, nothingToDo: nil)
            } catch let failure as APIFailure where failure.status == 409 && failure.slug == "version-conflict" {
                if options.ifVersion != nil || attempt == Self.maximumAttempts {
                    throw try await staleView(
                        since: view.version, current: nil, objects: options.ifVersion == nil ? planned.objects : nil)
                }
                let newer = try await client.namespaceView(namespace)
                guard planned.objects.allSatisfy({ $0.isUnchanged(from: view.flagSet, to: newer.flagSet) }) else {
                    throw try await staleView(since: view.version, current: newer, objects: planned.objects)
                }
                view = newer
                planned = try plan(view)
            }
        }
        throw CommandFailure("the change could not be applied after \(Self.maximumAttempts) attempts; retry")
    }

    /// The answer to a change that flagsd made. When what it says about the objects changed does not read (a
    /// newer flagsd's flag with a field this flagctl does not know), the envelope alone is read: the change is made,
    /// and the command says so rather than failing.
    static func answer(_ json: JSONValue) throws -> CommittedBody {
        if let answer = try? CommittedBody(json: json) { return answer }
        do {
            return try CommittedBody(json: json, readingObjects: false)
        } catch {
            throw CommandFailure("the flags service's answer to the change is not what flagctl reads: \(error)")
        }
    }

    private func question(_ planned: PlannedChange, view: NamespaceView) -> String {
        if let question = planned.question { return question }
        let action = planned.action.prefix(1).uppercased() + planned.action.dropFirst()
        return "\(action) (namespace \(view.namespace), version \(view.version))?"
    }

    /// Refuses a change the namespace's reason policy needs a reason for, before asking anything.
    private func checkReason(_ planned: PlannedChange, view: NamespaceView) throws {
        guard options.trimmedReason == nil, view.reasonPolicy.requiresReason(addsKillEntry: planned.addsKillEntry)
        else { return }
        if view.reasonPolicy == .always {
            throw CommandFailure.usage(
                "namespace '\(view.namespace)' requires a reason for every change; add --reason \"why\" to \(planned.action)"
            )
        }
        throw CommandFailure.usage(
            "namespace '\(view.namespace)' requires a reason to kill; add --reason \"why\" (an incident id helps) to \(planned.action)"
        )
    }

    /// The failure for a change based on a stale view: what changed since, by whom, when.
    ///
    /// - Parameters:
    ///   - since: the version the change was based on.
    ///   - current: the namespace now, when already read.
    ///   - objects: the objects the change edits; nil when any change of the namespace makes the view stale.
    func staleView(since version: Int64, current: NamespaceView?, objects: [ObjectReference]?) async throws
        -> CommandFailure
    {
        let entries = try await client.changes(namespace, after: version)
        let keys = Set((objects ?? []).map(\.key))
        let relevant =
            objects == nil ? entries : entries.filter { entry in entry.objects.contains { keys.contains($0.key) } }
        let latest = current?.version ?? entries.last?.version ?? version
        if let pinned = options.ifVersion, pinned > latest {
            return .usage(
                "--if-version \(pinned) is newer than namespace '\(namespace)' (at version \(latest)); pass the version 'flagctl get' shows"
            )
        }
        var message: String
        if let objects {
            let names = objects.map(\.description).joined(separator: ", ")
            message =
                "\(names) changed after you read namespace '\(namespace)' at version \(version); nothing was changed"
        } else {
            message = "namespace '\(namespace)' is at version \(latest), not \(version); nothing was changed"
        }
        let shown = relevant.suffix(5)
        if !shown.isEmpty {
            message += ". Changed since:"
            for entry in shown { message += "\n  \(entry.line)" }
            if relevant.count > shown.count {
                message += "\n  (and \(relevant.count - shown.count) earlier; 'flagctl audit' lists them)"
            }
        }
        let look = objects?.first.map { "'flagctl get \($0.key)'" } ?? "'flagctl get'"
        message += "\nLook at the current state with \(look), then run the command again if it still makes sense"
        return .conflict(message)
    }
}

extension ChangeOutcome {
    /// The one-line summary of a committed change, or of a change that changed nothing.
    func summaryLine(done: String, unchanged: String) -> String {
        if changed {
            return "\(done) (namespace \(view.namespace) is at version \(version))"
        }
        return "\(nothingToDo ?? unchanged); nothing changed (namespace \(view.namespace) stays at version \(version))"
    }
}
