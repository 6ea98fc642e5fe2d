import ClientTestSupport
import SwitchyardCore
import Testing

@testable import SwitchyardClient

struct SyncStateMachineTests {
    let policy = SyncStateMachine.Policy(
        namespace: "rider", longPollWait: .seconds(60), minimumPollInterval: .seconds(1),
        backoff: Backoff(initial: .seconds(1), maximum: .seconds(300)),
        maximumRetryAfter: .seconds(600))

    func machine(installed: SnapshotVersion? = nil, random: Double = 1) -> SyncStateMachine {
        SyncStateMachine(policy: policy, installed: installed, random: { random })
    }

    @Test func firstRequestWithoutASnapshotIsAPlainGet() {
        var machine = machine()
        #expect(machine.nextAction() == .fetch(.init(entityTag: nil, wait: nil)))
    }

    @Test func firstRequestWithACachedSnapshotIsAConditionalGetThatDoesNotWait() {
        var machine = machine(installed: .init(epoch: "e", version: 7))
        #expect(machine.nextAction() == .fetch(.init(entityTag: "\"e.7\"", wait: nil, acceptsDelta: true)))
    }

    @Test func afterTheServerAnswersEveryRequestLongPollsWithTheInstalledTag() {
        var machine = machine(installed: .init(epoch: "e", version: 7))
        _ = machine.nextAction()
        guard case .confirm = machine.received(.notModified, elapsed: .seconds(2)) else {
            Issue.record("a 304 should confirm the cached snapshot")
            return
        }
        #expect(machine.nextAction() == .fetch(.init(entityTag: "\"e.7\"", wait: .seconds(60), acceptsDelta: true)))
    }

    @Test func aNewerVersionIsInstalledAndBecomesTheNextTag() {
        var machine = machine(installed: .init(epoch: Fixtures.epoch, version: 3))
        let verdict = machine.received(.snapshot(Fixtures.snapshot(version: 4)), elapsed: .seconds(5))
        guard case .install(let snapshot, _) = verdict else {
            Issue.record("expected install, got \(verdict)")
            return
        }
        #expect(snapshot.version == 4)
        #expect(
            machine.nextAction()
                == .fetch(.init(entityTag: "\"\(Fixtures.epoch).4\"", wait: .seconds(60), acceptsDelta: true)))
    }

    @Test func anOlderVersionOfTheSameEpochIsRefusedAndKeepsTheInstalledTag() {
        var machine = machine(installed: .init(epoch: Fixtures.epoch, version: 9))
        let verdict = machine.received(.snapshot(Fixtures.snapshot(version: 8)), elapsed: .seconds(5))
        guard case .reject(let error) = verdict else {
            Issue.record("expected a refusal, got \(verdict)")
            return
        }
        #expect(error.kind == .olderVersion)
        #expect(machine.installed == .init(epoch: Fixtures.epoch, version: 9))
        #expect(machine.consecutiveFailures == 1)
    }

    @Test func theSameVersionAgainConfirmsWithoutReinstalling() {
        var machine = machine(installed: .init(epoch: Fixtures.epoch, version: 9))
        guard case .confirm = machine.received(.snapshot(Fixtures.snapshot(version: 9)), elapsed: .seconds(5)) else {
            Issue.record("the same version should confirm")
            return
        }
    }

    @Test func anotherEpochIsAcceptedEvenAtALowerVersion() {
        var machine = machine(installed: .init(epoch: Fixtures.epoch, version: 90))
        let verdict = machine.received(.snapshot(Fixtures.snapshot(version: 1, epoch: "epoch-2")), elapsed: .seconds(5))
        guard case .install(let snapshot, _) = verdict else {
            Issue.record("a recreated namespace (new epoch) should be accepted, got \(verdict)")
            return
        }
        #expect(snapshot.epoch == "epoch-2")
        #expect(machine.installed == .init(epoch: "epoch-2", version: 1))
    }

    @Test func aSnapshotOfAnotherNamespaceIsRefused() {
        var machine = machine()
        let verdict = machine.received(
            .snapshot(Fixtures.snapshot(version: 1, namespace: "driver")), elapsed: .seconds(5))
        guard case .reject(let error) = verdict else {
            Issue.record("expected a refusal, got \(verdict)")
            return
        }
        #expect(error.kind == .wrongNamespace)
        #expect(error.message.contains("driver"))
        #expect(machine.installed == nil)
    }

    @Test func aNotModifiedAnswerToARequestWithoutATagIsAProtocolViolation() {
        var machine = machine()
        guard case .reject(let error) = machine.received(.notModified, elapsed: .seconds(1)) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(error.kind == .protocolViolation)
    }

    @Test func failuresBackOffExponentiallyUpToTheMaximum() {
        var machine = machine(random: 1)
        var delays: [Duration] = []
        for _ in 0..<11 {
            _ = machine.received(.failed(ClientError(.transport, "refused")), elapsed: .zero)
            guard case .sleep(let delay) = machine.nextAction() else {
                Issue.record("a failure should be followed by a sleep")
                return
            }
            delays.append(delay)
        }
        #expect(delays == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300].map { Duration.seconds($0) })
    }

    @Test func backoffDrawsAFullJitterShareOfTheWindow() {
        var machine = machine(random: 0.25)
        for _ in 0..<3 { _ = machine.received(.failed(ClientError(.transport, "refused")), elapsed: .zero) }
        #expect(machine.nextAction() == .sleep(.seconds(1)))  // 0.25 of the 4 s window
    }

    @Test func aThrottledAnswerWaitsForRetryAfterPlusJitter() {
        var machine = machine(random: 0.5)
        let verdict = machine.received(.throttled(retryAfter: .seconds(30), status: 503), elapsed: .zero)
        guard case .reject(let error) = verdict else {
            Issue.record("expected a rejection")
            return
        }
        #expect(error.kind == .throttled)
        #expect(error.status == 503)
        #expect(machine.nextAction() == .sleep(.milliseconds(30_500)))
    }

    @Test func anOutrageousRetryAfterIsCapped() {
        var machine = machine(random: 0)
        _ = machine.received(.throttled(retryAfter: .seconds(1_000_000), status: 503), elapsed: .zero)
        #expect(machine.nextAction() == .sleep(.milliseconds(600_100)))
    }

    @Test func aSuccessEndsTheBackoff() {
        var machine = machine(installed: .init(epoch: "e", version: 1), random: 1)
        for _ in 0..<4 { _ = machine.received(.failed(ClientError(.timedOut, "slow")), elapsed: .zero) }
        #expect(machine.consecutiveFailures == 4)
        _ = machine.nextAction()
        _ = machine.received(.notModified, elapsed: .seconds(30))
        #expect(machine.consecutiveFailures == 0)
        #expect(machine.nextAction() == .fetch(.init(entityTag: "\"e.1\"", wait: .seconds(60), acceptsDelta: true)))
    }

    @Test func aServerThatAnswersLongPollsAtOnceCannotSpinTheClient() {
        var machine = machine(installed: .init(epoch: "e", version: 1))
        _ = machine.received(.notModified, elapsed: .milliseconds(200))
        #expect(machine.nextAction() == .sleep(.milliseconds(800)))
        #expect(machine.nextAction() == .fetch(.init(entityTag: "\"e.1\"", wait: .seconds(60), acceptsDelta: true)))
    }
}

/// Deltas in the sync decisions: asked for with a snapshot installed, applied only from the installed version, and
/// anything unusable answered by fetching the full snapshot at once.
struct SyncStateMachineDeltaTests {
    let policy = SyncStateMachine.Policy(
        namespace: "rider", longPollWait: .seconds(60), minimumPollInterval: .zero,
        backoff: Backoff(initial: .seconds(1), maximum: .seconds(300)))

    func delta(from base: Int64, to version: Int64, epoch: String = "e") -> SnapshotDelta {
        SnapshotDelta(
            namespace: "rider", epoch: epoch, baseVersion: base, version: version,
            checksum: "sha256:" + String(repeating: "0", count: 64),
            digest: "sha256:" + String(repeating: "0", count: 64))
    }

    @Test func aDeltaFromTheInstalledVersionIsAppliedAndMovesTheTag() {
        var machine = SyncStateMachine(policy: policy, installed: .init(epoch: "e", version: 3), random: { 1 })
        guard case .applyDelta(let delta) = machine.received(.delta(delta(from: 3, to: 5)), elapsed: .seconds(2)) else {
            Issue.record("a delta from the installed version should be applied")
            return
        }
        #expect(delta.version == 5)
        machine.deltaApplied()
        #expect(machine.nextAction() == .fetch(.init(entityTag: "\"e.5\"", wait: .seconds(60), acceptsDelta: true)))
    }

    @Test(arguments: [(2, "e"), (4, "e"), (3, "other")])
    func aDeltaFromAnotherVersionIsAGapAnsweredByTheFullSnapshotAtOnce(base: Int64, epoch: String) {
        var machine = SyncStateMachine(policy: policy, installed: .init(epoch: "e", version: 3), random: { 1 })
        _ = machine.received(.notModified, elapsed: .seconds(1))
        guard case .reject = machine.received(.delta(delta(from: base, to: 9, epoch: epoch)), elapsed: .seconds(1))
        else {
            Issue.record("a delta from \(epoch).\(base) to a client at e.3 should be refused")
            return
        }
        #expect(machine.installed == .init(epoch: "e", version: 3))
        #expect(
            machine.nextAction() == .fetch(.init(entityTag: "\"e.3\"", wait: nil, acceptsDelta: false)),
            "the full snapshot, without waiting or backing off")
        _ = machine.received(.snapshot(Fixtures.snapshot(version: 9, epoch: "e")), elapsed: .seconds(1))
        #expect(machine.nextAction() == .fetch(.init(entityTag: "\"e.9\"", wait: .seconds(60), acceptsDelta: true)))
    }

    @Test func aDeltaThatCannotBeAppliedKeepsTheInstalledVersionAndFetchesTheFullSnapshot() {
        var machine = SyncStateMachine(policy: policy, installed: .init(epoch: "e", version: 3), random: { 1 })
        let held = machine.installed
        _ = machine.received(.delta(delta(from: 3, to: 4)), elapsed: .seconds(1))
        machine.deltaFailed(ClientError(.invalidSnapshot, "checksum mismatch"), installed: held)
        #expect(machine.installed == held)
        #expect(machine.nextAction() == .fetch(.init(entityTag: "\"e.3\"", wait: nil, acceptsDelta: false)))
    }

    @Test func threeUnusableDeltasInARowStopTheClientAskingForThem() {
        var machine = SyncStateMachine(policy: policy, installed: .init(epoch: "e", version: 3), random: { 1 })
        for round in 0..<3 {
            #expect(machine.asksForDeltas, "round \(round)")
            let held = machine.installed
            _ = machine.received(.delta(delta(from: 3, to: 4)), elapsed: .seconds(1))
            machine.deltaFailed(ClientError(.invalidSnapshot, "checksum mismatch"), installed: held)
            _ = machine.received(.notModified, elapsed: .seconds(1))
        }
        #expect(!machine.asksForDeltas)
        #expect(machine.nextAction() == .fetch(.init(entityTag: "\"e.3\"", wait: .seconds(60), acceptsDelta: false)))
    }

    @Test func aClientWithDeltasTurnedOffNeverAsks() {
        var policy = policy
        policy.deltas = false
        var machine = SyncStateMachine(policy: policy, installed: .init(epoch: "e", version: 3), random: { 1 })
        #expect(machine.nextAction() == .fetch(.init(entityTag: "\"e.3\"", wait: nil, acceptsDelta: false)))
    }
}

struct BackoffTests {
    @Test func theWindowDoublesAfterEachFailureUpToTheMaximum() {
        let backoff = Backoff(initial: .milliseconds(500), maximum: .seconds(10))
        #expect(
            (1...7).map { backoff.ceiling(afterFailures: $0) }
                == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10)])
    }

    @Test func aZeroDrawStillWaitsATenthOfTheInitialWindow() {
        let backoff = Backoff(initial: .seconds(2), maximum: .seconds(60))
        #expect(backoff.delay(afterFailures: 5, random: 0) == .milliseconds(200))
    }

    @Test func hugeFailureCountsDoNotOverflow() {
        let backoff = Backoff(initial: .seconds(1), maximum: .seconds(300))
        #expect(backoff.delay(afterFailures: 10_000, random: 1) == .seconds(300))
    }
}
