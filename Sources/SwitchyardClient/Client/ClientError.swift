/// What went wrong in the client runtime: a transport failure, a refused snapshot, an unreadable file.
///
/// The client never throws these at the app: it keeps its last good snapshot and reports them through
/// ``FlagClient/Configuration/report``.
public struct ClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem it is; new kinds may be added.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        fileprivate let name: String
        fileprivate init(_ name: String) { self.name = name }

        /// The server could not be reached, or the connection broke.
        public static let transport = Kind("transport")
        /// The request took longer than its deadline (a slow or trickling server).
        public static let timedOut = Kind("timedOut")
        /// The server answered with a status the client cannot use.
        public static let httpStatus = Kind("httpStatus")
        /// The server asked the client to come back later (503 or 429).
        public static let throttled = Kind("throttled")
        /// A body or file is larger than the configured limit.
        public static let tooLarge = Kind("tooLarge")
        /// The bytes are not a valid snapshot document.
        public static let invalidSnapshot = Kind("invalidSnapshot")
        /// The snapshot belongs to another namespace.
        public static let wrongNamespace = Kind("wrongNamespace")
        /// The snapshot is older than the one the client holds (same epoch, lower version).
        public static let olderVersion = Kind("olderVersion")
        /// The server broke the protocol (a 304 for a request without an entity tag, an unreadable events reply).
        public static let protocolViolation = Kind("protocolViolation")
        /// A cache or state file is corrupt, truncated, empty or written by something else.
        public static let corruptFile = Kind("corruptFile")
        /// A file could not be read or written.
        public static let fileSystem = Kind("fileSystem")

        public var description: String { name }
    }

    public let kind: Kind
    /// What failed, with which input, and what to do next.
    public let message: String
    /// The HTTP status, for `httpStatus` and `throttled` errors.
    public let status: Int?

    package init(_ kind: Kind, _ message: String, status: Int? = nil) {
        self.kind = kind
        self.message = message
        self.status = status
    }

    public var description: String { message }
}
