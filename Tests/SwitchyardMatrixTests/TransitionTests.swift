import Foundation
import SwitchyardMatrix
import SwitchyardPlugins
import Testing

/// Where the shop's live plugins show: kept across combinations, so a plugin that stays would show.
final class ShopShelf {
    var shown: [String] = []
}

/// A live banner plugin; the leaky one registers a refresh observer outside its scope.
final class ShopBanner: LivePlugin {
    let text: String
    let shelf: ShopShelf
    let leaky: Bool
    static let observers = ObserverList()

    init(_ text: String, shelf: ShopShelf, leaky: Bool = false) {
        self.text = text
        self.shelf = shelf
        self.leaky = leaky
    }

    func attach(to scope: PluginScope) throws {
        shelf.shown.append(text)
        scope.register(text) { [shelf, text] in shelf.shown.removeAll { $0 == text } }
        if leaky { Self.observers.add { _ = self.text } }
    }
}

/// Observers held strongly, as a notification center holds them.
final class ObserverList: @unchecked Sendable {
    private let lock = NSLock()
    private var observers: [() -> Void] = []

    func add(_ observer: @escaping () -> Void) { lock.withLock { observers.append(observer) } }
}

struct TransitionTests {
    static let quiet = MatrixKitTests.quiet

    /// The shop with live banners (the tips banner leaky when asked) and its checkout add-ons.
    static func matrix(leakyTips: Bool = false, options: Matrix.Options) -> Matrix {
        var matrix = Matrix(flags: Shop.flagSet, source: "shop.yaml", options: options)
        let shelf = ShopShelf()
        let banner = PluginPoint<BannerInput, any LivePlugin>(
            "banner", states: SwitchAssignment.allOff,
            factories: [
                PluginFactoryOf(ShopSwitches.sale, isApplicable: { $0.saleRunning }) { _ in
                    ShopBanner("sale", shelf: shelf)
                },
                PluginFactoryOf(ShopSwitches.news) { _ in ShopBanner("news", shelf: shelf) },
                PluginFactoryOf(ShopSwitches.tips) { _ in ShopBanner("tips", shelf: shelf, leaky: leakyTips) },
            ])
        matrix.add(banner, inputs: [BannerInput(saleRunning: true), BannerInput(saleRunning: false)])
        matrix.add(
            ShopApp().checkout, inputs: [CheckoutInput(insurable: true), CheckoutInput(insurable: false)],
            serving: .everyEligible)
        return matrix
    }

    @Test func everySingleGateTransitionLeavesEveryLivePointAsAFreshRouteWould() async {
        let report = await Self.matrix(options: Matrix.Options(isolation: .inProcess, transitions: true)).run(
            Self.quiet)
        #expect(report.passed, "\(report.summary)")
        #expect(report.isExhaustive && report.checked == 512)
        // 9 gates: each combination turns each gate it leaves unset on and off again, 2 · 9 · 2^8 in all.
        #expect(report.transitionsChecked == 2 * 9 * 256)
        #expect(report.summary.contains("checked 4,608 single-gate transitions"), "\(report.summary)")
    }

    @Test func aPluginThatLeaksAfterItsDetachIsCaughtWithItsOwnSwitch() async throws {
        let report = await Self.matrix(
            leakyTips: true, options: Matrix.Options(isolation: .inProcess, transitions: true)
        )
        .run(Self.quiet)
        #expect(report.findings.map(\.check) == [.lifecycle], "\(report.summary)")
        let leak = try #require(report.findings.first)
        #expect(leak.scope == "banner")
        // From every switch off, turning the tips banner on and off again leaks it: the smallest transition.
        #expect(leak.combination == "none")
        #expect(
            leak.message.hasPrefix("banner: the plugin of plugin_switch_banner_tips leaked (input "), "\(leak.message)")
        #expect(leak.message.contains("after turning plugin_switch_banner_tips off again (on from here)"))
        #expect(leak.message.contains("still referenced after its detach"))
    }

    @Test func aPointTheHostCannotHoldIsNamedInTheNotes() async {
        var matrix = Matrix(
            flags: Shop.flagSet, source: "shop.yaml", options: Matrix.Options(isolation: .inProcess, transitions: true))
        matrix.add(
            MatrixPoint(
                name: "banner", switches: [ShopSwitches.sale, ShopSwitches.news, ShopSwitches.tips],
                inputs: [BannerInput(saleRunning: true)]
            ) { states, _ in
                [ShopSwitches.sale, ShopSwitches.news, ShopSwitches.tips].first(where: states.isEnabled).map { [$0] }
                    ?? []
            })
        matrix.add(ShopApp().checkout, inputs: [CheckoutInput(insurable: true)], serving: .everyEligible)
        let report = await matrix.run(Self.quiet)
        #expect(report.passed, "\(report.summary)")
        #expect(
            report.notes.contains(
                "transitions not checked at banner: not a PluginPoint, so a plugin host cannot hold it"))
    }

    /// In a child process, as `swift test` runs it, and beyond the bound: the per-point combinations and the
    /// covering rows, each with its transitions.
    @Test func transitionsRunInAChildProcessAndBeyondTheBound() async {
        var options = Matrix.Options(transitions: true)
        options.bound = 1 << 6
        let report = await Self.matrix(options: options).run(Self.quiet)
        #expect(report.passed, "\(report.summary)")
        #expect(!report.isExhaustive)
        #expect(report.transitionsChecked > 0)
    }
}
