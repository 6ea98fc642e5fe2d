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

    /// The series of the process as a whole.
    static func process(_ factory: any MetricsFactory) {
        for reason in LongPollRefusal.allCases { _ = counter(reason, factory) }
    }

    /// The series of one namespace, when flagsd first holds it.
    static func namespace(_ namespace: String, _ factory: any MetricsFactory) {
        for reason in BatchRefusal.allCases { _ = counter(reason, namespace: namespace, factory) }
        for reason in EventDropReason.all { _ = counter(reason, namespace: namespace, factory) }
    }

    static func counter(_ reason: LongPollRefusal, _ factory: any MetricsFactory) -> Counter {
        Counter(label: "flagsd_long_poll_refused_total", dimensions: [("reason", reason.rawValue)], factory: factory)
    }

    static func counter(_ reason: BatchRefusal, namespace: String, _ factory: any MetricsFactory) -> Counter {
        Counter(label: "flagsd_event_batches_refused_total", dimensions: [("namespace", namespace), ("reason", reason.rawValue)],
                factory: factory)
    }

    static func counter(_ reason: EventDropReason, namespace: String, _ factory: any MetricsFactory) -> Counter {
        Counter(label: "flagsd_events_dropped_total", dimensions: [("namespace", namespace), ("reason", reason.rawValue)], factory: factory)
    }
}
