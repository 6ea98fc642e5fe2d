import SwitchyardCore
import SwitchyardGuard
import Synchronization

/// The crash guard's series of each plugin switch, kept here and written after the metrics registry's at each scrape
/// of `/metrics`: `switchyard_guard_window_sessions`, `…_window_crashes`, `…_crash_rate_lower_bound` and
/// `…_crash_rate_bound` (gauges, `namespace`, `switch`), and `switchyard_guard_trips_total` (counter, with `scope`).
///
/// Not in the registry: it copies a family's series each time it adds one, so registering the six or seven series of
/// each of a namespace's ten thousand switches took minutes of a core at every start and whenever such a namespace
/// was created, while event ingestion waited behind it. Here a refresh replaces a namespace's values in one pass and
/// a scrape writes them in another. What a scrape reads is what the registry wrote: the same names, types, label
/// order and number formats; every switch's trip counters exist at 0 from its first assessment (KnownSeries: a
/// first trip is an increase).
package final class GuardSeries: Sendable {
    /// The gauges, in the order written.
    static let windowNames = [
        "switchyard_guard_window_sessions", "switchyard_guard_window_crashes",
        "switchyard_guard_crash_rate_lower_bound", "switchyard_guard_crash_rate_bound",
    ]
    static let tripsName = "switchyard_guard_trips_total"

    private struct Switch {
        /// `windowNames`' values.
        var window: [Double]
        /// Trips by scope (`global`, `city`, …), in the order first seen.
        var trips: [(scope: String, count: Int)] = []
    }

    private struct Namespace {
        var switches: [String: Switch] = [:]
        /// Switch keys in the order first assessed, so a scrape writes them alike each time.
        var order: [String] = []
    }

    private let namespaces = Mutex<[String: Namespace]>([:])

    package init() {}

    /// Records a namespace's assessments: each switch's window values and, when the guard may trip it, its trip
    /// counters at 0 for every scope it may trip in (counts already made are kept). A switch no longer assessed (it
    /// left the flag set) keeps its trip counts and its last values.
    func record(_ namespace: String, _ assessments: [GuardAssessment]) {
        namespaces.withLock { namespaces in
            var held = namespaces[namespace] ?? Namespace()
            for assessment in assessments {
                let overall = assessment.overall
                let window = [
                    Double(overall.sessions), Double(overall.crashes), overall.lowerBound ?? 0, overall.bound,
                ]
                if held.switches[assessment.key] == nil { held.order.append(assessment.key) }
                var entry = held.switches[assessment.key] ?? Switch(window: [])
                entry.window = window
                if assessment.policy.enabled {
                    for scope in ["global"] + assessment.policy.scopeBy.map(\.rawValue)
                    where !entry.trips.contains(where: { $0.scope == scope }) {
                        entry.trips.append((scope, 0))
                    }
                }
                held.switches[assessment.key] = entry
            }
            namespaces[namespace] = held
        }
    }

    /// Counts a trip of a switch in a scope (`global`, `city`, `cohort`).
    func countTrip(in namespace: String, key: String, scope: String) {
        namespaces.withLock { namespaces in
            var held = namespaces[namespace] ?? Namespace()
            if held.switches[key] == nil { held.order.append(key) }
            var entry = held.switches[key] ?? Switch(window: [0, 0, 0, 0])
            if let index = entry.trips.firstIndex(where: { $0.scope == scope }) {
                entry.trips[index].count += 1
            } else {
                entry.trips.append((scope, 1))
            }
            held.switches[key] = entry
            namespaces[namespace] = held
        }
    }

    /// Appends the series in Prometheus' text format (namespaces by name, switches in the order first assessed).
    func write(into buffer: inout [UInt8]) {
        namespaces.withLock { namespaces in
            let names = namespaces.keys.sorted()
            for (index, metric) in Self.windowNames.enumerated() {
                buffer.append(contentsOf: "# TYPE \(metric) gauge\n".utf8)
                for name in names {
                    let held = namespaces[name]!
                    for key in held.order {
                        buffer.append(contentsOf: "\(metric){namespace=\"\(name)\",switch=\"\(key)\"} ".utf8)
                        buffer.append(contentsOf: "\(held.switches[key]!.window[index])\n".utf8)
                    }
                }
            }
            buffer.append(contentsOf: "# TYPE \(Self.tripsName) counter\n".utf8)
            for name in names {
                let held = namespaces[name]!
                for key in held.order {
                    for (scope, count) in held.switches[key]!.trips {
                        buffer.append(
                            contentsOf:
                                "\(Self.tripsName){namespace=\"\(name)\",switch=\"\(key)\",scope=\"\(scope)\"} \(count)\n"
                                .utf8)
                    }
                }
            }
        }
    }
}
