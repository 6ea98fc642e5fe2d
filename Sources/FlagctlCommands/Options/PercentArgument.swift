import ArgumentParser
import Foundation
import SwitchyardCore

extension Rollout {
    /// A percentage typed on the command line (`12.5`, `12.5%`, ` 100 `), exactly as basis points.
    ///
    /// - Parameter what: the argument or option, named in the usage error (`PERCENT`, `--rollout`).
    /// - Throws: `ValidationError` saying what is wrong with it.
    static func commandLine(_ text: String, what: String) throws -> Rollout {
        var trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("%") { trimmed.removeLast() }
        switch Rollout.parsePercent(trimmed) {
        case .success(let rollout): return rollout
        case .failure(let error): throw ValidationError("\(what) \(error). Pass a percentage such as 12.5.")
        }
    }
}
