import Foundation
public import Logging
import SwitchyardCore
import SwitchyardStorage
import Synchronization

/// A log handler writing one JSON object per line (`time`, `level`, `label`, `message`, then metadata), for
/// log collectors. Executables bootstrap it; libraries only take a `Logger`.
///
/// ```swift
/// LoggingSystem.bootstrap { label in JSONLogHandler(label: label, level: .info) }
/// ```
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    let label: String
    let output: @Sendable (String) -> Void

    /// - Parameters:
    ///   - label: the logger's label.
    ///   - level: the lowest level written.
    ///   - output: where lines go; standard error by default.
    public init(
        label: String, level: Logger.Level, output: @escaping @Sendable (String) -> Void = JSONLogHandler.standardError
    ) {
        self.label = label
        self.logLevel = level
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var object = JSONObject([
            ("time", .string(Date().iso8601)), ("level", .string(event.level.rawValue)), ("label", .string(label)),
            ("message", .string(event.message.description)),
        ])
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) where object[key] == nil {
            object[key] = Self.json(value)
        }
        output(
            JSONValue.object(object).serializedString(JSONValue.WritingOptions(prettyPrinted: false, sortedKeys: false))
        )
    }

    static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let string): .string(string)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let dictionary):
            .object(JSONObject(dictionary.sorted { $0.key < $1.key }.map { ($0.key, json($0.value)) }))
        }
    }

    /// Writes a line to standard error.
    public static let standardError: @Sendable (String) -> Void = { line in
        lock.withLock { _ in FileHandle.standardError.write(Data((line + "\n").utf8)) }
    }

    private static let lock = Mutex(())
}
