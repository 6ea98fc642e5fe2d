import Benchmark
import CoreFixtures
import SwitchyardCore

/// Evaluation through handles on a generated 1,000-flag snapshot, against two references measured in the same
/// run (a `[String: Bool]` lookup and an uncompiled evaluator over the model), and decode + compile time.
///
/// Run: `swift package --package-path Benchmarks -c release benchmark` (or `bench/run-core.sh` for the table).
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .instructions],
        timeUnits: .nanoseconds,
        warmupIterations: 10,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 1_000_000
    )

    let compiled = CompiledSnapshot(Fixtures.snapshot(flagCount: 1_000))
    let context = Fixtures.context
    let plain = compiled.handle(for: Fixtures.plainKey)!
    let targeted = compiled.handle(for: Fixtures.targetedKey)!
    let experiment = compiled.handle(for: Fixtures.experimentKey)!
    let dictionary = DictionaryClient(compiled, context: context)
    let model = ModelEvaluator(compiled.snapshot.flagSet)

    // Each iteration is 1,000 evaluations (scaling factor kilo); figures are per evaluation.
    Benchmark("evaluate plain switch (handle)") { benchmark in
        let evaluator = compiled.evaluator(for: context)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(evaluator.evaluate(identity(plain)))
        }
    }

    Benchmark("isEnabled plain switch (handle)") { benchmark in
        let evaluator = compiled.evaluator(for: context)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(evaluator.isEnabled(identity(plain)))
        }
    }

    Benchmark("evaluate targeted switch (handle)") { benchmark in
        let evaluator = compiled.evaluator(for: context)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(evaluator.evaluate(identity(targeted)))
        }
    }

    Benchmark("isEnabled targeted switch (handle)") { benchmark in
        let evaluator = compiled.evaluator(for: context)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(evaluator.isEnabled(identity(targeted)))
        }
    }

    Benchmark("evaluate experiment (handle)") { benchmark in
        let evaluator = compiled.evaluator(for: context)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(evaluator.evaluate(identity(experiment)))
        }
    }

    // Allocations, unscaled: one iteration is 1,000,000 evaluations, so a single allocation among them shows.
    for (name, handle) in [("plain", plain), ("targeted", targeted), ("experiment", experiment)] {
        Benchmark(
            "allocations per 1,000,000 evaluations, \(name)",
            configuration: .init(metrics: [.mallocCountTotal, .wallClock], timeUnits: .milliseconds, warmupIterations: 1,
                                 scalingFactor: .one, maxDuration: .seconds(2), maxIterations: 5)
        ) { benchmark in
            let evaluator = compiled.evaluator(for: context)
            benchmark.startMeasurement()
            for _ in 0..<1_000_000 {
                blackHole(evaluator.evaluate(identity(handle)))
            }
        }
    }

    Benchmark("reference: [String: Bool] lookup") { benchmark in
        let key = Fixtures.plainKey
        for _ in benchmark.scaledIterations {
            blackHole(dictionary.isEnabled(identity(key)))
        }
    }

    Benchmark("reference: model evaluator, plain") { benchmark in
        let key = Fixtures.plainKey
        for _ in benchmark.scaledIterations {
            blackHole(model.isEnabled(identity(key), context: context))
        }
    }

    Benchmark("reference: model evaluator, targeted") { benchmark in
        let key = Fixtures.targetedKey
        for _ in benchmark.scaledIterations {
            blackHole(model.isEnabled(identity(key), context: context))
        }
    }

    Benchmark("prepare evaluator for a context") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(compiled.evaluator(for: identity(context)))
        }
    }

    // Decode (parse, verify the checksum, read and validate) then compile, from bytes built beforehand.
    for flagCount in [1_000, 10_000] {
        let bytes = SnapshotDocument.encode(Fixtures.snapshot(flagCount: flagCount))
        Benchmark(
            "decode + compile \(flagCount) flags",
            configuration: .init(
                metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .peakMemoryResident],
                timeUnits: .milliseconds,
                warmupIterations: 1,
                scalingFactor: .one,
                maxDuration: .seconds(10),
                maxIterations: flagCount == 1_000 ? 40 : 10
            )
        ) { _ in
            let snapshot = try SnapshotDocument.decode(bytes)
            blackHole(CompiledSnapshot(snapshot))
        }
    }
}
