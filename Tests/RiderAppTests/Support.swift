import Foundation
import RiderApp
import SwitchyardCore
import SwitchyardFlagFiles
import SwitchyardPlugins
import Synchronization

/// Paths of the repository's files, found from this source file's location.
enum TestPaths {
    static let repository: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    static let flags = repository + "/Flags"
}

enum RiderFlags {
    /// `Flags/rider.yaml` as a flag set.
    static func flagSet() throws -> FlagSet {
        guard let file = FlagDirectory(reading: TestPaths.flags).file(namespace: "rider") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return file.flagSet
    }

    /// A client holding `Flags/rider.yaml` (changed by `change`) as its bundled snapshot, without a server.
    /// - Parameter directory: where the client keeps its files (its event queue); none by default.
    static func client(context: EvaluationContext, directory: URL? = nil, change: (inout FlagSet) -> Void = { _ in })
        throws -> FlagClient
    {
        var flagSet = try flagSet()
        change(&flagSet)
        var configuration = FlagClient.Configuration(
            serverURL: URL(string: "http://127.0.0.1:9")!, namespace: "rider", token: "unused",
            context: context, directory: directory)
        configuration.bundledSnapshot = SnapshotDocument.encode(Snapshot(epoch: "e1", version: 1, flagSet: flagSet))
        configuration.events.recordsExposures = false
        return FlagClient(configuration: configuration)
    }
}

/// Outcomes reported by the app, in order.
final class RecordingOutcomes: OutcomeReporter {
    private let log = Mutex<[(metric: String, value: Double?)]>([])

    var tracked: [(metric: String, value: Double?)] { log.withLock { $0 } }

    func track(_ metric: String, value: Double?) {
        log.withLock { $0.append((metric, value)) }
    }
}

/// Switch states that record what plugin points tell them.
final class RecordingStates: SwitchStates {
    let assignment: SwitchAssignment
    private let log = Mutex<(created: [String], failed: [String])>(([], []))

    init(_ assignment: SwitchAssignment) { self.assignment = assignment }

    var created: [String] { log.withLock { $0.created } }
    var failed: [String] { log.withLock { $0.failed } }

    func isEnabled(_ pluginSwitch: PluginSwitch) -> Bool { assignment.isEnabled(pluginSwitch) }

    func willCreatePlugin(for pluginSwitch: PluginSwitch, at pluginPoint: String) {
        log.withLock { $0.created.append(pluginSwitch.key) }
    }

    func pluginFactoryFailed(for pluginSwitch: PluginSwitch, at pluginPoint: String, error: any Error) {
        log.withLock { $0.failed.append("\(pluginPoint): \(pluginSwitch.key): \(error)") }
    }
}

extension TripOutcome {
    /// The served switch keys of a point.
    func served(_ point: String) -> [String] {
        route(of: point)?.servedBy.map(\.key) ?? ["no such point"]
    }
}
