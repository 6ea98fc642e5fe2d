// Figures that need no benchmark harness:
//
//   core-figures loop CASE COUNT    runs COUNT evaluations of one case (run it under callgrind twice, with two
//                                   counts: the difference in instructions over the difference in counts is
//                                   the cost of one evaluation, free of the machine's noise)
//   core-figures decode FLAGS COUNT decodes and compiles a generated snapshot COUNT times, printing each time
//   core-figures check              prints the fixture's answers, so the figures measure what they claim
//
// CASE: plain, targeted, experiment, isEnabled-plain, isEnabled-targeted, dictionary, model-plain, model-targeted, prepare, decode-1000, decode-10000 (decode + compile).
import CoreFixtures
import SwitchyardCore

@inline(never)
func sink<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// Keeps the optimiser from hoisting loop-invariant work out of the measured loop.
@inline(never)
func opaque<T>(_ value: T) -> T { value }

let arguments = CommandLine.arguments.dropFirst()
let compiled = CompiledSnapshot(Fixtures.snapshot(flagCount: 1_000))
let context = Fixtures.context
let evaluator = compiled.evaluator(for: context)
let plain = compiled.handle(for: Fixtures.plainKey)!
let targeted = compiled.handle(for: Fixtures.targetedKey)!
let experiment = compiled.handle(for: Fixtures.experimentKey)!

switch arguments.first {
case "loop":
    guard arguments.count == 3, let count = Int(arguments.dropFirst(2).first!) else {
        fatalError("usage: core-figures loop CASE COUNT")
    }
    let name = arguments.dropFirst().first!
    let dictionary = DictionaryClient(compiled, context: context)
    let model = ModelEvaluator(compiled.snapshot.flagSet)
    switch name {
    case "plain": for _ in 0..<count { sink(evaluator.evaluate(opaque(plain))) }
    case "targeted": for _ in 0..<count { sink(evaluator.evaluate(opaque(targeted))) }
    case "experiment": for _ in 0..<count { sink(evaluator.evaluate(opaque(experiment))) }
    case "isEnabled-plain": for _ in 0..<count { sink(evaluator.isEnabled(opaque(plain))) }
    case "isEnabled-targeted": for _ in 0..<count { sink(evaluator.isEnabled(opaque(targeted))) }
    case "dictionary": for _ in 0..<count { sink(dictionary.isEnabled(opaque(Fixtures.plainKey))) }
    case "model-plain": for _ in 0..<count { sink(model.isEnabled(opaque(Fixtures.plainKey), context: context)) }
    case "model-targeted": for _ in 0..<count { sink(model.isEnabled(opaque(Fixtures.targetedKey), context: context)) }
    case "prepare": for _ in 0..<count { sink(compiled.evaluator(for: opaque(context))) }
    case "decode-1000", "decode-10000":
        let bytes = SnapshotDocument.encode(Fixtures.snapshot(flagCount: name == "decode-1000" ? 1_000 : 10_000))
        for _ in 0..<count { sink(CompiledSnapshot(try SnapshotDocument.decode(opaque(bytes)))) }
    default: fatalError("unknown case '\(name)'; see the comment at the top of main.swift")
    }
case "decode":
    // core-figures decode FLAGS COUNT: decodes and compiles a FLAGS-flag snapshot COUNT times.
    guard arguments.count == 3, let flagCount = Int(arguments.dropFirst().first!), let count = Int(arguments.last!) else {
        fatalError("usage: core-figures decode FLAGS COUNT")
    }
    let bytes = SnapshotDocument.encode(Fixtures.snapshot(flagCount: flagCount))
    let clock = ContinuousClock()
    for _ in 0..<count {
        let started = clock.now
        sink(CompiledSnapshot(try SnapshotDocument.decode(bytes)))
        let decoded = clock.now
        var tree = try JSONValue.parse(bytes).objectValue!
        let parsed = clock.now
        tree["checksum"] = nil
        sink(SHA256.hexDigest(JSONValue.object(tree).serialized(.canonical)))
        let checked = clock.now
        let flagSet = try FlagSet(tree: .object(tree), unit: .basisPoints, extraFields: ["format", "epoch", "version", "checksum"])
        let read = clock.now
        sink(CompiledSnapshot(Snapshot(epoch: "e", version: 1, flagSet: flagSet)))
        print("decode + compile \(flagCount) flags (\(bytes.count) bytes): \(decoded - started); parse \(parsed - decoded), checksum \(checked - parsed), read \(read - checked), compile \(clock.now - read)")
    }
case "check":
    for (name, handle) in [("plain", plain), ("targeted", targeted), ("experiment", experiment)] {
        let details = evaluator.details(for: handle, evaluation: evaluator.evaluate(handle))
        print("\(name): \(details.flagKey) = \(details.value) reason \(details.reason) by \(details.decidedBy) bucket \(details.bucket.map(String.init) ?? "-")")
    }
default:
    print("usage: core-figures loop CASE COUNT | core-figures check")
}
