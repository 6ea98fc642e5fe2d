package import Foundation
import SwitchyardCore

/// Wall-clock times as the client stores and sends them.
///
/// Files hold integer milliseconds since 1970; the wire carries RFC 3339 UTC text with milliseconds
/// (`2026-11-22T09:14:03.250Z`), written without a formatter object so it never depends on locale or calendar.
package enum Timestamp {
    /// Milliseconds since 1970 for a date (rounded down).
    package static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// The date of milliseconds since 1970.
    package static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// `2026-11-22T09:14:03.250Z`.
    package static func rfc3339(_ date: Date) -> String {
        let totalMilliseconds = milliseconds(date)
        let days =
            totalMilliseconds >= 0 ? totalMilliseconds / 86_400_000 : (totalMilliseconds - 86_399_999) / 86_400_000
        let millisecondOfDay = totalMilliseconds - days * 86_400_000
        let (year, month, day) = UTCTime.civil(days: days)
        let hour = millisecondOfDay / 3_600_000
        let minute = millisecondOfDay / 60000 % 60
        let second = millisecondOfDay / 1000 % 60
        let millisecond = millisecondOfDay % 1000
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return
            "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)).\(pad(millisecond, 3))Z"
    }
}

extension Duration {
    /// The duration in seconds, as a floating-point number.
    package var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// A duration of fractional seconds, clamped to zero and to about 30 years.
    package static func clampedSeconds(_ seconds: Double) -> Duration {
        guard seconds.isFinite, seconds > 0 else { return .zero }
        return .milliseconds(Int64(min(seconds, 1e9) * 1000))
    }
}
