public import ArgumentParser
import Foundation

/// `--reason`, `--yes`, `--if-version`: what every command that changes something accepts.
public struct ChangeOptions: ParsableArguments, Sendable {
    @Option(
        help: ArgumentHelp(
            "Why: recorded in the audit log; required where the namespace's reason policy says so.",
            valueName: "text"))
    public var reason: String?

    @Flag(name: [.customShort("y"), .long], help: "Do not ask for confirmation (needed when not on a terminal).")
    public var yes = false

    @Option(
        help: ArgumentHelp(
            "Refuse the change unless the namespace is still at this version (the one you looked at).",
            valueName: "version"))
    public var ifVersion: Int64?

    public init() {}

    public func validate() throws {
        try Self.refuseBlank(reason: reason, example: "INC-4411: promos card crashes in Lagos")
        if let ifVersion, ifVersion < 1 {
            throw ValidationError(
                "--if-version \(ifVersion) is not a version (versions start at 1; 'flagctl get' shows the current one)."
            )
        }
    }

    /// Refuses a `--reason` that is only white space, saying what a reason looks like.
    ///
    /// - Parameters:
    ///   - why: what the reason should say, after "Say why" (e.g. " the plan should go on").
    ///   - example: an example reason.
    ///   - optional: whether the command also works without a reason (the message says to leave it out).
    static func refuseBlank(reason: String?, why: String = "", example: String, optional: Bool = false) throws {
        guard let reason, reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return }
        throw ValidationError(
            "--reason is empty. Say why\(why), e.g. --reason \"\(example)\"\(optional ? ", or leave it out" : "").")
    }

    /// The reason, trimmed.
    var trimmedReason: String? {
        reason?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Asking before a change: on a terminal the user answers; elsewhere `--yes` must be given.
enum Confirmation {
    /// What to do about a change that needs confirmation.
    enum Decision: Equatable {
        /// Go ahead (`--yes`, or the user answered yes).
        case proceed
        /// Ask the user on the terminal.
        case ask
        /// Not on a terminal and no `--yes`: refuse with a usage error.
        case refuseWithoutTerminal
    }

    /// Decides before asking.
    static func decide(yes: Bool, isTerminal: Bool) -> Decision {
        if yes { return .proceed }
        return isTerminal ? .ask : .refuseWithoutTerminal
    }

    /// Whether an answer typed at the prompt means yes (`y`, `yes`, any case, spaces around); anything else,
    /// including an empty line or end of input, means no.
    static func isYes(_ answer: String?) -> Bool {
        guard let answer else { return false }
        return ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased())
    }

    /// Asks (or not) and throws unless the change may go ahead.
    ///
    /// - Parameters:
    ///   - question: what is about to happen, as a question without the `[y/N]`.
    ///   - action: the same in a few words, for the message that asks for `--yes` (`kill kill_home_feed in cities lagos`).
    ///   - preview: lines printed before the question.
    /// - Throws: `CommandFailure.usage` when not on a terminal without `--yes`; `CommandFailure` (status 1)
    ///   when the answer is no.
    static func confirm(_ question: String, action: String, preview: [String] = [], yes: Bool, console: Console)
        async throws
    {
        switch decide(yes: yes, isTerminal: console.isInputTerminal) {
        case .proceed:
            return
        case .refuseWithoutTerminal:
            throw CommandFailure.usage(
                "not on a terminal, so flagctl cannot ask before it changes anything; add --yes to \(action)")
        case .ask:
            for line in preview { console.writeError(line + "\n") }
            let answer = await console.ask("\(question) [y/N] ")
            guard isYes(answer) else {
                throw CommandFailure("not confirmed; nothing was changed")
            }
        }
    }
}
