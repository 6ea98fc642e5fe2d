// The client runtime's figures (bench/client-figures.sh runs them all and writes bench/README.md's table rows):
//
//   client-figures isenabled [seconds]         isEnabled ns per call and allocations while the sync loop applies updates
//   client-figures memory                      memory of a client holding a 1,000-flag snapshot
//   client-figures apply [flags] [versions]   CPU, wall time and allocations to install a one-flag change as a delta and
//                                              as a full snapshot (the reference), through the sync loop, cache on disk
//   client-figures propagation URL TOKEN [rounds] [clients]
//                                              time from a change on a live flagsd to the change visible in clients
//
// Each figure comes with a reference measured in the same run (the machine is shared and noisy): reads with no
// updates landing and a `[String: Bool]` lookup; the snapshot document's size and the decoded model alone; the
// change's own HTTP round trip.
import CoreFixtures
import Foundation
import MallocCounter
import SwitchyardClient
import SwitchyardCore

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "isenabled":
    IsEnabledFigures.run(seconds: arguments.dropFirst().first.flatMap(Double.init) ?? 3)
case "memory":
    MemoryFigures.run()
case "apply":
    let rest = Array(arguments.dropFirst())
    try await ApplyFigures.run(flags: rest.first.flatMap { Int($0) } ?? 10_000, versions: rest.dropFirst().first.flatMap { Int($0) } ?? 30)
case "propagation":
    let rest = Array(arguments.dropFirst())
    guard rest.count >= 2, let server = URL(string: rest[0]) else {
        FileHandle.standardError.write(Data("usage: client-figures propagation URL TOKEN [rounds] [clients]\n".utf8))
        exit(64)
    }
    await PropagationFigures.run(server: server, token: rest[1], rounds: rest.count > 2 ? Int(rest[2]) ?? 30 : 30,
                                 clients: rest.count > 3 ? Int(rest[3]) ?? 1 : 1)
default:
    FileHandle.standardError.write(Data("usage: client-figures isenabled [seconds] | memory | apply [flags] [versions] | propagation URL TOKEN [rounds] [clients]\n".utf8))
    exit(64)
}

/// Prints one figure as a tab-separated line: name, value, unit (bench/client-figures.sh collects them).
func figure(_ name: String, _ value: Double, _ unit: String) {
    print("\(name)\t\(value < 100 ? String(format: "%.2f", value) : String(format: "%.0f", value))\t\(unit)")
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
}
