import Foundation
import SwitchyardMatrix
import SwitchyardPlugins
import Testing

/// The kit catches deliberately broken plugin points, each with its smallest failing combination and the command
/// that reproduces it.
struct BrokenPointTests {
    static let quiet = MatrixKitTests.quiet

    /// A hand-written banner router with a copy-paste bug: it gates the sale banner on the news switch.
    static func miswiredBanner() -> MatrixPoint {
        MatrixPoint(
            name: "banner", switches: [ShopSwitches.sale, ShopSwitches.news, ShopSwitches.tips],
            inputs: [BannerInput(saleRunning: true)]
        ) { states, input in
            if states.isEnabled(ShopSwitches.news) && input.saleRunning { return [ShopSwitches.sale] }
            if states.isEnabled(ShopSwitches.news) { return [ShopSwitches.news] }
            if states.isEnabled(ShopSwitches.tips) { return [ShopSwitches.tips] }
            return []
        }
    }

    static func matrix(banner: MatrixPoint, isolation: Matrix.Isolation = .inProcess) -> Matrix {
        var matrix = Matrix(flags: Shop.flagSet, source: "shop.yaml", options: Matrix.Options(isolation: isolation))
        matrix.add(banner)
        matrix.add(ShopApp().checkout, inputs: [CheckoutInput(insurable: true)], serving: .everyEligible)
        return matrix
    }

    @Test func aPluginThatIgnoresItsSwitchIsCaughtWithTheOneSwitchThatTriggersIt() async throws {
        let report = await Self.matrix(banner: Self.miswiredBanner()).run(Self.quiet)
        // The miswiring shows three ways, each with its own smallest combination.
        #expect(
            report.findings.map(\.check) == [.servedSwitchedOff, .fallbackOrder, .missedEligible], "\(report.summary)")
        let ignored = try #require(report.findings(.servedSwitchedOff).first)
        #expect(ignored.scope == "banner")
        #expect(
            ignored.message
                == "banner: served the plugin of plugin_switch_banner_sale although plugin_switch_banner_sale is off")
        #expect(ignored.combination == "plugin_switch_banner_news")
        #expect(ignored.gatesSet == 1)
        // News effectively on (kill_banner and master alive) and sale effectively off (off, or kill_promotions
        // killed): 512 / 8 · 3/4.
        #expect(ignored.failingCombinations == 48)
        #expect(
            ignored.reproduce == "SWITCHYARD_MATRIX_COMBINATION='plugin_switch_banner_news' swift test --filter "
                + "'SwitchyardMatrixTests.BrokenPointTests/aPluginThatIgnoresItsSwitchIsCaughtWithTheOneSwitchThatTriggersIt'"
        )
        // With news off the sale banner never serves: tips serves in its place, or the core flow.
        #expect(
            report.findings(.fallbackOrder).first?.combination == "plugin_switch_banner_sale,plugin_switch_banner_tips")
        #expect(report.findings(.missedEligible).first?.combination == "plugin_switch_banner_sale")
        #expect(
            report.findings(.missedEligible).first?.message
                == "banner: served the core flow, leaving out plugin_switch_banner_sale, which is on and applicable")
        // Its single input has a sale running, so the news banner never serves.
        #expect(report.neverServed == ["banner/plugin_switch_banner_news"])
    }

    @Test func aPluginServedWithEverySwitchOffIsCaughtInTheEmptyCombination() async throws {
        let alwaysTips = MatrixPoint(
            name: "banner", switches: [ShopSwitches.sale, ShopSwitches.news, ShopSwitches.tips],
            inputs: [BannerInput(saleRunning: false)]
        ) { states, _ in
            states.isEnabled(ShopSwitches.news) ? [ShopSwitches.news] : [ShopSwitches.tips]
        }
        let report = await Self.matrix(banner: alwaysTips).run(Self.quiet)
        let core = try #require(report.findings(.coreFlowExpected).first)
        #expect(core.combination == "none")
        #expect(core.combinationDescription == "every switch off, nothing killed")
        #expect(
            core.message
                == "banner: served the plugin of plugin_switch_banner_tips although every switch of the point is off; "
                + "the point must yield its core flow")
        // With the master killed the message says so.
        let killed = await Self.matrix(banner: alwaysTips).run(
            Matrix.RunSettings(combination: "master", environment: [:]))
        #expect(
            killed.findings(.coreFlowExpected).first?.message.contains("although the master kill switch is killed")
                == true)
        // Tips on but killed by its group is a plugin served with its switch off.
        let group = await Self.matrix(banner: alwaysTips).run(
            Matrix.RunSettings(
                combination: "plugin_switch_banner_sale,plugin_switch_banner_tips,kill_banner", environment: [:]))
        #expect(group.findings.map(\.check) == [.coreFlowExpected])
        #expect(group.findings.first?.message.contains("although kill_banner is killed") == true)
    }

    @Test func aWrongFallbackOrderIsCaughtWithBothSwitchesOn() async throws {
        let faults = ShopApp.Faults(bannerOrder: [ShopSwitches.news, ShopSwitches.sale, ShopSwitches.tips])
        let report = await ShopApp.matrix(faults, options: Matrix.Options(isolation: .inProcess)).run(Self.quiet)
        #expect(report.findings.map(\.check) == [.declaration, .fallbackOrder])
        #expect(
            report.findings[0].message == "plugin point 'banner': code tries plugin_switch_banner_news, "
                + "plugin_switch_banner_sale, plugin_switch_banner_tips; shop.yaml declares plugin_switch_banner_sale, "
                + "plugin_switch_banner_news, plugin_switch_banner_tips")
        let order = report.findings[1]
        #expect(order.combination == "plugin_switch_banner_sale,plugin_switch_banner_news")
        #expect(order.gatesSet == 2)
        #expect(
            order.message
                == "banner: served plugin_switch_banner_news, but plugin_switch_banner_sale comes first in the "
                + "declared order (plugin_switch_banner_sale, plugin_switch_banner_news, plugin_switch_banner_tips) and is on and "
                + "applicable (input sale running)")
    }

    @Test func aCoreFlowThatBreaksWhenOnePluginIsOffIsCaught() async throws {
        var matrix = ShopApp.matrix(options: Matrix.Options(isolation: .inProcess))
        // The checkout page was only ever tested with gift wrap on: without it, the page has no total line.
        matrix.flow("checkout shows a total") { combination in
            let page = ShopApp(states: combination.states).checkoutPage(CheckoutInput(insurable: false))
            guard page.contains("gift wrap") else {
                throw FlowFailure("the checkout page \(page) has no total without gift wrap")
            }
        }
        let report = await matrix.run(Self.quiet)
        let finding = try #require(report.findings.first)
        #expect(report.findings.count == 1)
        #expect(finding.scope == "flow 'checkout shows a total'")
        #expect(finding.check == .flowFailed)
        #expect(finding.combination == "none")
        #expect(
            finding.message
                == "flow 'checkout shows a total' failed: the checkout page [\"order\"] has no total without gift wrap")
        // Every combination without gift wrap effectively on (on, and kill_checkout, kill_promotions, master alive).
        #expect(finding.failingCombinations == 512 - 32)
    }

    @Test func aFactoryThatThrowsIsReportedAndTheNextEligiblePluginStillServes() async throws {
        let report = await ShopApp.matrix(
            ShopApp.Faults(insuranceThrows: true), options: Matrix.Options(isolation: .inProcess)
        )
        .run(Self.quiet)
        #expect(report.findings.map(\.check) == [.factoryThrew])
        #expect(report.findings.first?.combination == "plugin_switch_insurance")
        #expect(
            report.findings.first?.message == "checkout_addons: the factory of plugin_switch_insurance threw: "
                + "the insurer's quote service is down (input insurable order)")
    }

    /// The tips banner traps (an index out of range) when it builds. Combinations run in a child process, so the
    /// trap is reported with its combination and the run goes on.
    @Test func aPluginWhoseBuildTrapsIsIsolatedAndReportedWithItsCombination() async throws {
        let report = await ShopApp.matrix(ShopApp.Faults(tipsTraps: true)).run(Self.quiet)
        let trap = try #require(report.findings(.trapped).first)
        #expect(report.findings.count == 1, "\(report.summary)")
        #expect(trap.scope == "banner")
        #expect(trap.combination == "plugin_switch_banner_tips")
        #expect(trap.message.hasPrefix("banner: trapped (input sale running): "))
        #expect(trap.message.contains("Index out of range"))
        // The run went on past the trap: every combination was checked, the other point and the other input too.
        #expect(report.checked == 512)
        #expect(report.neverServed == ["banner/plugin_switch_banner_tips"])
        // Tips builds (and traps) when it is on and alive (kill_banner and master alive) and news is off: the input
        // without a sale then reaches it. 512 / 8 / 2.
        #expect(trap.failingCombinations == 32)
        #expect(!report.notes.contains { $0.contains("in this process") }, "\(report.notes)")
    }

    @Test func beyondTheBoundTheKitStillFindsAndShrinksAWrongFallbackOrder() async throws {
        var options = Matrix.Options(isolation: .inProcess)
        options.bound = 64
        let faults = ShopApp.Faults(bannerOrder: [ShopSwitches.news, ShopSwitches.sale, ShopSwitches.tips])
        let report = await ShopApp.matrix(faults, options: options).run(Self.quiet)
        #expect(!report.isExhaustive)
        #expect(report.coverage.contains("pairwise covering array"))
        #expect(report.checked < 512)
        let order = try #require(report.findings(.fallbackOrder).first)
        #expect(order.combination == "plugin_switch_banner_sale,plugin_switch_banner_news")
    }
}
