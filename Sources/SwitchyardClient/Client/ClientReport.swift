import Foundation

/// Something the client runtime reports to the app: a failure it recovered from, a refused snapshot, a crash
/// found at launch, a plugin factory that threw.
///
/// Route reports to the app's logging or analytics in ``FlagClient/Configuration/report``. The client never
/// logs by itself and never puts the token in a report.
public struct ClientReport: Sendable, CustomStringConvertible {
    /// What happened; new kinds may be added.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        fileprivate let name: String
        fileprivate init(_ name: String) { self.name = name }

        /// A snapshot was installed (from the bundle, the cache or the server).
        public static let snapshotInstalled = Kind("snapshotInstalled")
        /// A snapshot request failed, or its answer was refused; the client keeps what it has and retries.
        public static let syncFailed = Kind("syncFailed")
        /// The bundled snapshot or the cache file could not be used.
        public static let snapshotIgnored = Kind("snapshotIgnored")
        /// A file (cache, session, crash guard, event queue) could not be read or written.
        public static let storageFailed = Kind("storageFailed")
        /// The previous session ended without `endSession()`: `flagKeys` were active in it.
        public static let previousSessionCrashed = Kind("previousSessionCrashed")
        /// The crash-loop guard forced `flagKeys` off on this device.
        public static let crashGuardTripped = Kind("crashGuardTripped")
        /// The crash-loop guard released `flagKeys` (a changed definition or the TTL).
        public static let crashGuardLifted = Kind("crashGuardLifted")
        /// A plugin factory threw; the plugin point used the next eligible factory or the core flow.
        public static let pluginFactoryFailed = Kind("pluginFactoryFailed")
        /// The event queue was full and dropped its oldest events.
        public static let eventsDropped = Kind("eventsDropped")
        /// The server rejected events (they are not retried).
        public static let eventsRejected = Kind("eventsRejected")
        /// Sending events failed; they stay queued and are retried.
        public static let eventsFailed = Kind("eventsFailed")
        /// An outcome passed to ``FlagClient/track(_:value:)`` was not queued: its metric name or value is
        /// invalid, or the context has no unit id to attribute it to. Nothing is sent.
        public static let metricRefused = Kind("metricRefused")

        public var description: String { name }
    }

    public let kind: Kind
    /// A sentence saying what happened and what the client did about it.
    public let message: String
    /// The flags concerned, if any.
    public let flagKeys: [String]
    /// The plugin point concerned, if any.
    public let pluginPoint: String?
    /// The underlying error, if any.
    public let error: (any Error)?

    public init(
        kind: Kind, message: String, flagKeys: [String] = [], pluginPoint: String? = nil, error: (any Error)? = nil
    ) {
        self.kind = kind
        self.message = message
        self.flagKeys = flagKeys
        self.pluginPoint = pluginPoint
        self.error = error
    }

    public var description: String { "\(kind): \(message)" }
}
