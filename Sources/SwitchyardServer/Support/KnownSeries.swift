import Metrics
import SwitchyardStorage

/// The series that Dashboards/ and the alert rules read, made to exist at 0 for every label value flagsd knows
/// from the start: a panel then shows 0 rather than "No data", and a counter's first increase is an increase (a
/// series first seen at 1 shows none in Prometheus). Every label value here is a fixed word or a name flagsd
/// holds (a namespace, a declared switch), never one a client made up.
enum KnownSeries {
    /// Why an event batch is refused with 429: `flagsd_event_batches_refused_total{namespace,reason}`.
    enum BatchRefusal: String, CaseIterable {
        case backlogFull = "backlog_full"
        case tokenRate = "token_rate"
        case addressRate = "address_rate"
    }

    /// Why a long-poll is refused: `flagsd_long_poll_refused_total{reason}`, past a cap in the hub (`address_cap`,
    /// `waiter_cap`) or past a rate before it (`address_rate`, `token_rate`).
    enum LongPollRefusal: String, CaseIterable {
        case addressCap = "address_cap"
        case waiterCap = "waiter_cap"
        case addressRate = "address_rate"
        case tokenRate = "token_rate"
    }

    /// Why a token check fails: `flagsd_auth_failures_total{reason}` (`Authenticator.fail`).
    static let authFailures = ["missing", "invalid", "revoked", "role", "namespace"]
    /// The event types counted: `flagsd_events_ingested_total{namespace,type}`.
    static let eventTypes = ["session", "exposure", "metric"]
    /// Why an event is refused: `flagsd_events_rejected_total{namespace,reason}` (`EventBatch.Rejection.category`).
    static let eventRejections = ["invalid", "unknown_type", "in_future", "too_old"]
    /// What a crash guard confirmation ends in: `switchyard_guard_checks_total{namespace,result}`.
    static let guardChecks = ["tripped", "no_trip", "already_disabled", "held", "proposed", "error"]
    /// The actors that change flags by themselves: `flagsd_changes_by_actor_total{namespace,actor}` (people's token
    /// names appear with their first change).
    static let automaticActors = ["crash-guard", "release-plan"]

    /// The series of the process as a whole.
    static func process(_ factory: any MetricsFactory) {
        for reason in LongPollRefusal.allCases { _ = counter(reason, factory) }
        for reason in authFailures {
            _ = Counter(label: "flagsd_auth_failures_total", dimensions: [("reason", reason)], factory: factory)
        }
        _ = Timer(label: "flagsd_change_commit_duration_seconds", factory: factory)
    }

    /// The series of one namespace, when flagsd first holds it.
    static func namespace(_ namespace: String, _ factory: any MetricsFactory) {
        let name = ("namespace", namespace)
        for reason in BatchRefusal.allCases { _ = counter(reason, namespace: namespace, factory) }
        for reason in EventDropReason.all { _ = counter(reason, namespace: namespace, factory) }
        for type in eventTypes {
            _ = Counter(label: "flagsd_events_ingested_total", dimensions: [name, ("type", type)], factory: factory)
        }
        for reason in eventRejections {
            _ = Counter(
                label: "flagsd_events_rejected_total", dimensions: [name, ("reason", reason)], factory: factory)
        }
        _ = Counter(label: "flagsd_events_duplicate_total", dimensions: [name], factory: factory)
        _ = Counter(label: "flagsd_experiment_units_entered_total", dimensions: [name], factory: factory)
        for result in guardChecks {
            _ = Counter(
                label: "switchyard_guard_checks_total", dimensions: [name, ("result", result)], factory: factory)
        }
        _ = Gauge(label: "switchyard_guard_open_proposals", dimensions: [name], factory: factory)
        for source in ChangeSource.all {
            _ = Counter(
                label: "flagsd_changes_total", dimensions: [name, ("source", source.rawValue)], factory: factory)
        }
        for actor in automaticActors {
            _ = Counter(label: "flagsd_changes_by_actor_total", dimensions: [name, ("actor", actor)], factory: factory)
        }
    }

    static func counter(_ reason: LongPollRefusal, _ factory: any MetricsFactory) -> Counter {
        Counter(label: "flagsd_long_poll_refused_total", dimensions: [("reason", reason.rawValue)], factory: factory)
    }

    static func counter(_ reason: BatchRefusal, namespace: String, _ factory: any MetricsFactory) -> Counter {
        Counter(
            label: "flagsd_event_batches_refused_total",
            dimensions: [("namespace", namespace), ("reason", reason.rawValue)],
            factory: factory)
    }

    static func counter(_ reason: EventDropReason, namespace: String, _ factory: any MetricsFactory) -> Counter {
        Counter(
            label: "flagsd_events_dropped_total", dimensions: [("namespace", namespace), ("reason", reason.rawValue)],
            factory: factory)
    }
}
