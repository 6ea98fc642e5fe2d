// Figures that need no benchmark harness:
//
//   core-figures loop CASE COUNT    runs COUNT evaluations of one case (run it under callgrind twice, with two
//                                   counts: the difference in instructions over the difference in counts is
//                                   the cost of one evaluation, free of the machine's noise)
//   core-figures decode FLAGS COUNT decodes and compiles a generated snapshot COUNT times, printing each time
//   core-figures delta FLAGS COUNT  applies COUNT one-flag deltas to a FLAGS-flag snapshot (decode the delta, recompile
//                                   what changed, check the digest), printing each, beside a full decode + compile
//   core-figures check              prints the fixture's answers, so the figures measure what they claim
//
// CASE: plain, targeted, experiment, isEnabled-plain, isEnabled-targeted, dictionary, model-plain, model-targeted, prepare,
// decode-1000, decode-10000 (decode + compile), delta-10000 (a one-flag delta applied to 10,000 flags).
import CoreFixtures
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SwitchyardCore

/// CPU time of the calling thread, in seconds (less disturbed by other processes on a shared machine than the wall
/// clock).
func threadCPUTime() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// Decodes and applies a delta (a function of its own, so callgrind can count it alone: --toggle-collect='*applyDelta*').
@inline(never)
func applyDelta(_ bytes: [UInt8], to compiled: CompiledSnapshot, digest: SnapshotDigest) throws -> (CompiledSnapshot, SnapshotDigest) {
    try compiled.applying(SnapshotDelta.decode(bytes), digest: digest)
}

/// A snapshot one version on, with one targeted switch's rollout changed: what a one-flag change makes.
func oneFlagChange(_ snapshot: Snapshot, step: Int) -> Snapshot {
    var next = snapshot
    next.version += 1
    let index = next.flagSet.flags.firstIndex { $0.key == Fixtures.targetedKey }!
    next.flagSet.flags[index].pluginSwitch?.rollout = Rollout(basisPoints: 1_000 + step % 8_000)!
    return next
}

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
    case "delta-10000":
        var snapshot = try SnapshotDocument.decode(SnapshotDocument.encode(Fixtures.snapshot(flagCount: 10_000)))
        var compiled = CompiledSnapshot(snapshot)
        var digest = SnapshotDigest(snapshot.flagSet)
        // The deltas, built without hashing the whole snapshot each time (the digest is kept up to date as a
        // client keeps it; the checksum is not what a compiled snapshot checks).
        var deltas: [[UInt8]] = []
        var sums = digest
        var changes = ChangedObjects()
        changes.flags = [Fixtures.targetedKey]
        for step in 0..<count {
            let next = oneFlagChange(snapshot, step: step)
            sums.replace(flag: snapshot.flagSet.flag(Fixtures.targetedKey), with: next.flagSet.flag(Fixtures.targetedKey))
            deltas.append(SnapshotDelta(base: snapshot.version, target: next, changes: changes,
                                        checksum: "sha256:" + String(repeating: "0", count: 64), digest: sums.value(for: next)).encode())
            snapshot = next
        }
        for bytes in deltas {
            (compiled, digest) = try applyDelta(opaque(bytes), to: compiled, digest: digest)
        }
        sink(compiled)
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
        let cpuStart = threadCPUTime()
        sink(CompiledSnapshot(try SnapshotDocument.decode(bytes)))
        let cpu = threadCPUTime() - cpuStart
        let decoded = clock.now
        var tree = try JSONValue.parse(bytes).objectValue!
        let parsed = clock.now
        tree["checksum"] = nil
        sink(SHA256.hexDigest(JSONValue.object(tree).serialized(.canonical)))
        let checked = clock.now
        let flagSet = try FlagSet(tree: .object(tree), unit: .basisPoints, extraFields: ["format", "epoch", "version", "checksum"])
        let read = clock.now
        sink(CompiledSnapshot(Snapshot(epoch: "e", version: 1, flagSet: flagSet)))
        print("decode + compile \(flagCount) flags (\(bytes.count) bytes): \(decoded - started), \(cpu * 1000) ms CPU; parse \(parsed - decoded), checksum \(checked - parsed), read \(read - checked), compile \(clock.now - read)")
    }
case "delta":
    // core-figures delta FLAGS COUNT: one-flag deltas applied in turn, each timed (wall and thread CPU), beside a full
    // decode + compile of the same snapshot each time (the reference, in the same run).
    guard arguments.count == 3, let flagCount = Int(arguments.dropFirst().first!), let count = Int(arguments.last!) else {
        fatalError("usage: core-figures delta FLAGS COUNT")
    }
    var snapshot = try SnapshotDocument.decode(SnapshotDocument.encode(Fixtures.snapshot(flagCount: flagCount)))
    var compiled = CompiledSnapshot(snapshot)
    let digestStart = threadCPUTime()
    var digest = SnapshotDigest(snapshot.flagSet)
    print("digest of the full snapshot (once per full install): \((threadCPUTime() - digestStart) * 1000) ms CPU")
    let clock = ContinuousClock()
    for step in 0..<count {
        let next = oneFlagChange(snapshot, step: step)
        let full = SnapshotDocument.encode(next)
        let deltaBytes = SnapshotDelta(from: snapshot, to: next).encode()
        let wallStart = clock.now
        let cpuStart = threadCPUTime()
        (compiled, digest) = try compiled.applying(SnapshotDelta.decode(deltaBytes), digest: digest)
        let cpu = threadCPUTime() - cpuStart
        let wall = clock.now - wallStart
        let fullWallStart = clock.now
        let fullCPUStart = threadCPUTime()
        sink(CompiledSnapshot(try SnapshotDocument.decode(full)))
        let fullCPU = threadCPUTime() - fullCPUStart
        let fullWall = clock.now - fullWallStart
        print("apply a one-flag delta to \(flagCount) flags (\(deltaBytes.count) bytes): \(cpu * 1000) ms CPU, \(wall) wall; "
            + "full decode + compile (\(full.count) bytes): \(fullCPU * 1000) ms CPU, \(fullWall) wall")
        snapshot = next
    }
    precondition(compiled.snapshot == snapshot, "the deltas led to the snapshot")
case "check":
    for (name, handle) in [("plain", plain), ("targeted", targeted), ("experiment", experiment)] {
        let details = evaluator.details(for: handle, evaluation: evaluator.evaluate(handle))
        print("\(name): \(details.flagKey) = \(details.value) reason \(details.reason) by \(details.decidedBy) bucket \(details.bucket.map(String.init) ?? "-")")
    }
default:
    print("usage: core-figures loop CASE COUNT | core-figures decode FLAGS COUNT | core-figures delta FLAGS COUNT | core-figures check")
}
