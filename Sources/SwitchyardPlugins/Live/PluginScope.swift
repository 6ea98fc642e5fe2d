/// What a live plugin registers while it serves, released in reverse order when it is detached (or when its
/// `attach` throws): lifecycle-bound registrations, so a plugin cannot leave a layer, an observer or a timer
/// behind.
///
/// ```swift
/// func attach(to scope: PluginScope) throws {
///     let token = feed.insertCard(card, at: scope.position)
///     scope.register("promotions card") { [feed] in feed.removeCard(token) }
/// }
/// ```
///
/// Not thread-safe: use it on the host's executor, from `attach(to:)` and from callbacks the plugin gets there.
public final class PluginScope {
    /// The plugin point's name.
    public let pluginPoint: String
    /// The switch of the plugin the scope belongs to.
    public let pluginSwitch: PluginSwitch
    /// The plugin's place in the point's declared order (0 for the first switch): where a surface that shows
    /// several plugins (a feed, a map) puts this one, whichever attached first.
    public let position: Int

    private var registrations: [(what: String, release: () -> Void)] = []
    private var released = false
    /// Called with a registration made after the scope was released.
    var onLateRegistration: ((String) -> Void)?

    init(pluginPoint: String, pluginSwitch: PluginSwitch, position: Int) {
        self.pluginPoint = pluginPoint
        self.pluginSwitch = pluginSwitch
        self.position = position
    }

    /// Registers a resource and how to release it.
    ///
    /// - Parameters:
    ///   - what: a few words for reports (`traffic overlay`, `location observer`).
    ///   - release: removes the resource; called once, on the host's executor, after the plugin's `detach()`.
    ///     Registered after the scope was released, it runs at once and the registration is reported as a leak.
    public func register(_ what: String, release: @escaping () -> Void) {
        guard !released else {
            release()
            onLateRegistration?(what)
            return
        }
        registrations.append((what, release))
    }

    /// How many registrations the scope holds.
    public var registrationCount: Int { registrations.count }

    /// What the scope holds, in the order registered.
    public var registered: [String] { registrations.map(\.what) }

    /// Whether the scope was released (its plugin detached or its attach failed).
    public var isReleased: Bool { released }

    /// Releases every registration, last registered first; later registrations are released at once.
    /// - Returns: how many it released.
    @discardableResult
    func release() -> Int {
        released = true
        var count = 0
        while let last = registrations.popLast() {
            last.release()
            count += 1
        }
        return count
    }
}

@available(*, unavailable, message: "a scope belongs to the host's executor")
extension PluginScope: Sendable {}
