public import ArgumentParser
import Foundation
import SwitchyardCore
import SwitchyardWire

/// `flagctl revert VERSION`: undoes one change by restoring what it touched, as a new change.
public struct Revert: FlagctlCommand {
    public static let configuration = CommandConfiguration(
        abstract: "Undo one change: restore the flags and kill switches it touched to their state before it.",
        discussion: """
            Takes the change with that namespace version ('flagctl audit' and 'flagctl watch' show versions) \
            and restores every object it touched to its definition before the change, as a new change; \
            objects it created are removed. Versions are never reused, so the revert takes the next one.

            If a later change touched the same objects, reverting would undo that change too, so flagctl \
            refuses (exit status 3) and lists those changes: revert them first, newest first, or pass \
            --if-version with the current version to revert on top of what you have now seen.

            Examples:

              flagctl revert 14 --reason "14 broke the promo card on Android"
              flagctl revert 14 --if-version 16

            Exit status: 0 ok, 1 failure (the result would be invalid), 3 later changes touched the same \
            objects or the namespace changed meanwhile, 4 no such change, 5 token refused, 64 usage.
            """
    )

    @Argument(help: ArgumentHelp("The namespace version of the change to undo.", valueName: "version"))
    public var version: Int64
    @OptionGroup public var change: ChangeOptions
    @OptionGroup public var server: ServerOptions
    @OptionGroup public var outputOptions: OutputOptions

    public init() {}

    public func validate() throws {
        guard version >= 1 else {
            throw ValidationError("\(version) is not a version; versions start at 1 ('flagctl audit' lists them).")
        }
    }

    public func run(console: Console) async throws {
        let (client, namespace) = try server.namespaceClient(console)
        let target: ChangeEntry
        do {
            target = try ChangeEntry(
                json: try await client.get(APIClient.path("v1", "namespaces", namespace, "changes", String(version))))
        } catch let failure as APIFailure where failure.status == 404 {
            if failure.detail.contains("does not exist") { throw client.namespaceNotFound(namespace) }
            throw CommandFailure.notFound(
                "namespace '\(namespace)' has no change with version \(version); 'flagctl audit' lists its changes")
        }
        let objects: [ObjectReference] = target.objects.compactMap { object in
            switch object.kind {
            case "flag": .flag(object.key)
            case "kill_switch": .killSwitch(object.key)
            default: nil
            }
        }
        let keys = Set(target.objects.map(\.key))
        let later = try await client.changes(namespace, after: version).filter { entry in
            entry.objects.contains { keys.contains($0.key) }
        }
        let current = later.last?.version
        if let newest = current, change.ifVersion == nil || change.ifVersion! < newest {
            var message =
                "reverting version \(version) (\(target.summary)) would also undo later changes to the same objects:"
            for entry in later.suffix(5) { message += "\n  \(entry.line)" }
            message +=
                "\nRevert those first (newest first), or pass --if-version with the current version to revert anyway"
            throw CommandFailure.conflict(message)
        }
        let flow = ChangeFlow(client: client, console: console, namespace: namespace, options: change)
        let version = self.version
        let outcome = try await flow.run { view in
            PlannedChange(
                path: APIClient.path("v1", "namespaces", view.namespace, "changes", String(version), "revert"),
                objects: objects, action: "revert version \(version) (\(target.summary))")
        }
        let restored = target.objects.map { "\($0.kind.replacingOccurrences(of: "_", with: " ")) \($0.key)" }.joined(
            separator: ", ")
        outputOptions.emit(
            outcome,
            [
                outcome.summaryLine(
                    done: "reverted version \(version) by \(target.actor) (\(target.summary)): restored \(restored)",
                    unchanged: "the objects of version \(version) are as they were before it already")
            ], console: console)
    }
}
