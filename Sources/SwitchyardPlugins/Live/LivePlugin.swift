/// A plugin that a ``PluginHost`` keeps on screen: attached when it starts serving, detached the moment it stops
/// (its switch turned off, a kill switch killed, the crash-loop guard holding it off, its input no longer
/// applicable).
///
/// ```swift
/// final class TrafficLayer: MapLayer, LivePlugin {
///     let map: MapSurface
///
///     func attach(to scope: PluginScope) throws {
///         let layer = try map.addOverlay(TrafficOverlay(), at: scope.position)
///         scope.register("traffic overlay") { [map] in map.removeOverlay(layer) }
///         let timer = Timer.scheduledTimer(withTimeInterval: 30, repeats: true) { [weak self] _ in self?.refresh() }
///         scope.register("refresh timer") { timer.invalidate() }
///     }
/// }
/// ```
///
/// Implementation requirements:
///
/// - `attach(to:)` and `detach()` run on the host's executor (the main actor for UI), one plugin at a time, in
///   the order the host decides: a point's detaches before its attaches, so a slot is free when its next plugin
///   attaches.
/// - Register every resource that outlives `attach` (a layer, an observer, a timer, a subscription) with the
///   scope: the host releases them in reverse order after `detach()`, and also when `attach` throws half way.
///   Registrations made after the detach are released at once and reported as leaks.
/// - `attach` may throw: the host releases what it registered, reports the error like a factory that throws, and
///   tries the next eligible plugin (or the core flow).
/// - Do not keep the plugin alive from outside its scope: in debug builds the host reports a plugin (a class
///   instance) still referenced after its detach, since something it registered outside the scope still holds it.
public protocol LivePlugin {
    /// Starts serving: show what the plugin shows and register every resource with `scope`.
    /// - Throws: any error; the host then skips this plugin.
    func attach(to scope: PluginScope) throws

    /// Stops serving, before the scope's registrations are released (save state, stop work in flight). Defaults
    /// to nothing: the scope's releases do the removing.
    func detach()
}

extension LivePlugin {
    public func detach() {}
}

/// Why a live plugin was skipped: its `attach(to:)` threw. Reported through the switch states like a factory
/// failure (`ClientReport.Kind.pluginFactoryFailed` with a ``FlagClient``).
public struct PluginAttachFailure: Error, CustomStringConvertible {
    /// What `attach(to:)` threw.
    public let underlying: any Error

    public var description: String { "attach threw: \(underlying)" }
}
