import Foundation
import SwitchyardCore
import SwitchyardFlagFiles
import Testing

/// Outcome metrics in flag files: read, written, checked with their field paths, and left out of snapshots.
struct MetricFileTests {
    static let text = """
        namespace: rider
        metrics:
          trip_booked:
            description: A rider booked a trip.
            owner: team-rider
            kind: conversion
          trips: {kind: count, cap: 20}
          fare: {kind: value, cap: 200.5, better: higher}
          time_to_book: {kind: value, cap: 600, better: lower}
          fare_per_trip: {kind: ratio, numerator: fare, denominator: trips}
          crashes_per_trip: {kind: ratio, numerator: crashed_sessions, denominator: trips, better: lower}

        """

    func problems(_ metrics: String) -> [String] {
        do {
            _ = try FlagFile(yaml: "namespace: rider\nmetrics:\n" + metrics, path: "Flags/rider.yaml")
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    @Test func metricsReadWithTheirKindsCapsAndDirections() throws {
        let flagSet = try FlagFile(yaml: Self.text, path: "Flags/rider.yaml").flagSet
        #expect(
            flagSet.metrics.map(\.name) == [
                "trip_booked", "trips", "fare", "time_to_book", "fare_per_trip", "crashes_per_trip",
            ])
        #expect(
            flagSet.metric("trip_booked")
                == MetricDefinition(
                    name: "trip_booked", description: "A rider booked a trip.",
                    owner: "team-rider", kind: .conversion))
        #expect(flagSet.metric("trips")?.cap == 20)
        #expect(flagSet.metric("fare")?.cap == 200.5)
        #expect(flagSet.metric("time_to_book")?.better == .lower)
        #expect(
            flagSet.metric("fare_per_trip")?.numerator == "fare"
                && flagSet.metric("fare_per_trip")?.denominator == "trips")
        #expect(flagSet.allMetrics.map(\.name).prefix(3) == ["sessions", "crashed_sessions", "crash_rate"])
    }

    @Test func metricsRoundTripThroughYAMLAndTheAPIFormInTheirOrder() throws {
        let flagSet = try FlagFile(yaml: Self.text, path: "Flags/rider.yaml").flagSet
        let yaml = flagSet.yamlText()
        #expect(
            yaml.contains(
                """
                metrics:
                  trip_booked:
                    description: A rider booked a trip.
                    owner: team-rider
                    kind: conversion

                  trips:
                    kind: count
                    cap: 20

                  fare:
                    kind: value
                    cap: 200.5

                  time_to_book:
                    kind: value
                    better: lower
                    cap: 600

                """))
        let reread = try FlagFile(yaml: yaml, path: "Flags/rider.yaml").flagSet
        #expect(reread == flagSet)
        #expect(reread.metrics == flagSet.metrics)
        let api = flagSet.tree(unit: .basisPoints)
        #expect(api["metrics"]?["trips"]?["cap"] == .int(20))
        #expect(api["metrics"]?["fare"]?["cap"] == .number(JSONNumber(uncheckedLiteral: "200.5")))
        #expect(api["metrics"]?["fare"]?["better"] == nil)
        #expect(try FlagSet(tree: .object(api), unit: .basisPoints).metrics == flagSet.metrics)
    }

    @Test func snapshotsLeaveTheMetricsOutAndAreByteForByteTheSame() throws {
        let flagSet = try FlagFile(contentsOf: TestPaths.riderFile).flagSet
        #expect(flagSet.metrics.count == 6)
        var without = flagSet
        without.metrics = []
        let bytes = SnapshotDocument.encodeWithChecksum(Snapshot(epoch: "e1", version: 3, flagSet: flagSet))
        let bytesWithout = SnapshotDocument.encodeWithChecksum(Snapshot(epoch: "e1", version: 3, flagSet: without))
        #expect(bytes.bytes == bytesWithout.bytes)
        #expect(bytes.checksum == bytesWithout.checksum)
        let text = String(decoding: bytes.bytes, as: UTF8.self)
        #expect(!text.contains("metrics") && !text.contains("fare_per_trip") && !text.contains("time_to_book"))
        let decoded = try SnapshotDocument.decode(bytes.bytes)
        #expect(decoded.flagSet.metrics.isEmpty)
        #expect(flagSet.tree(unit: .basisPoints, includingServerPolicies: false)["metrics"] == nil)
    }

    @Test func theRiderFileDeclaresItsSixMetrics() throws {
        let flagSet = try FlagFile(contentsOf: TestPaths.riderFile).flagSet
        let kinds = Dictionary(uniqueKeysWithValues: flagSet.metrics.map { ($0.name, $0.kind) })
        #expect(
            kinds == [
                "trip_booked": .conversion, "trips": .count, "fare": .value, "time_to_book": .value,
                "fare_per_trip": .ratio,
                "time_per_trip": .ratio,
            ])
        #expect(flagSet.metric("trip_booked")?.owner == "team-rider")
        #expect(flagSet.metric("trips")?.cap == 20)
        #expect(flagSet.metric("fare")?.cap == 200 && flagSet.metric("fare")?.better == .higher)
        #expect(flagSet.metric("time_to_book")?.cap == 600 && flagSet.metric("time_to_book")?.better == .lower)
        #expect(
            flagSet.metric("fare_per_trip")?.numerator == "fare"
                && flagSet.metric("fare_per_trip")?.denominator == "trips")
    }

    @Test func eachRuleNamesTheFieldItConcerns() {
        #expect(
            problems("  fare: {kind: value}\n") == [
                "Flags/rider.yaml: metrics.fare.cap: is required for a value metric (the most one unit's sum counts for)"
            ])
        #expect(
            problems("  fare: {kind: value, cap: 0}\n") == [
                "Flags/rider.yaml: metrics.fare.cap: 0 must be above 0 (the most one unit's sum counts for)"
            ])
        #expect(
            problems("  fare: {kind: value, cap: 0x10}\n") == [
                "Flags/rider.yaml: metrics.fare.cap: 0x10 is not written as a plain decimal number; write it as JSON would (e.g. 12, 0.5, 12.34)"
            ])
        #expect(
            problems("  fare: {kind: value, cap: .inf}\n") == [
                "Flags/rider.yaml: metrics.fare.cap: .inf is not a finite number"
            ])
        #expect(problems("  fare: {kind: value, cap: 2e2}\n") == [], "YAML 1.2 floats may have exponents")
        #expect(
            problems("  trips: {kind: count, cap: 0}\n") == [
                "Flags/rider.yaml: metrics.trips.cap: 0 must be a whole number of at least 1 (the most occurrences one unit counts for)"
            ])
        #expect(
            problems("  crash_rate: {kind: ratio, numerator: crashed_sessions, denominator: sessions}\n") == [
                "Flags/rider.yaml: metrics.crash_rate: 'crash_rate' is a built-in metric (sessions, crashed_sessions, crash_rate); every namespace has it, so it may not be declared"
            ])
        #expect(
            problems("  r: {kind: ratio, numerator: sessions}\n") == [
                "Flags/rider.yaml: metrics.r.denominator: is required for a ratio metric (name a declared or built-in metric that is not a ratio)"
            ])
        #expect(
            problems("  trips: {kind: count, denominator: sessions}\n") == [
                "Flags/rider.yaml: metrics.trips.denominator: only a ratio metric has a denominator (this one is a count metric)"
            ])
        #expect(
            problems("  \(String(repeating: "m", count: 65)): {kind: count}\n") == [
                "Flags/rider.yaml: metrics.\(String(repeating: "m", count: 65)): '\(String(repeating: "m", count: 40))…' is longer than 64 characters"
            ])
        #expect(problems("  \(String(repeating: "m", count: 64)): {kind: count}\n") == [])
        #expect(
            problems("  trips: {kind: count, cpa: 3}\n") == [
                "Flags/rider.yaml: metrics.trips.cpa: unknown field; did you mean 'cap'?"
            ])
        #expect(problems("  trips: count\n") == ["Flags/rider.yaml: metrics.trips: must be an object, not a string"])
        #expect(
            problems("  trips: {kind: count, better: true}\n") == [
                "Flags/rider.yaml: metrics.trips.better: must be a string, not a boolean (in YAML, quote it: \"true\")"
            ])
    }

    @Test func aNamespaceDeclaresAtMostSixtyFourMetrics() {
        let sixtyFour = (1...64).map { "  m\($0): {kind: conversion}\n" }.joined()
        #expect(problems(sixtyFour) == [])
        #expect(
            problems(sixtyFour + "  m65: {kind: conversion}\n") == [
                "Flags/rider.yaml: metrics: declares 65 metrics; a namespace may declare at most 64 (the built-in ones apart)"
            ])
    }
}
