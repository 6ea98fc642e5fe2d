import Foundation
import SwitchyardMatrix
import SwitchyardMatrixPlan
import SwitchyardPlugins
import Testing

/// The kit over correct plugin points: every combination runs, every check passes.
struct MatrixKitTests {
    /// No `SWITCHYARD_MATRIX_*` from the process running the tests.
    static let quiet = Matrix.RunSettings(environment: [:], progressBar: false)

    @Test func correctPointsPassInEveryCombination() async {
        var matrix = ShopApp.matrix()
        matrix.flow("checkout lists the order first") { combination in
            let page = ShopApp(states: combination.states).checkoutPage(CheckoutInput(insurable: true))
            guard page.first == "order" else { throw FlowFailure("the page starts with \(page)") }
        }
        let report = await matrix.run(Self.quiet)
        #expect(report.findings.isEmpty, "\(report.summary)")
        #expect(report.isExhaustive)
        #expect(report.checked == 512)
        #expect(report.planned == 512)
        #expect(report.neverServed.isEmpty)
        #expect(report.pointCount == 2 && report.inputCount == 4 && report.flowCount == 1)
        #expect(
            report.summary.hasPrefix(
                """
                matrix shop: exhaustive: every one of the 2^9 = 512 combinations of 9 gates
                  2 plugin points (4 inputs), 1 flow; shard 1/1: combinations 0..<512 of 512
                  checked 512 combinations in
                """))
        #expect(report.summary.hasSuffix("every plugin served in some combination\n  all checks passed"))
    }

    @Test func aFlowSeesEveryCombinationOnceWithItsEffectiveStates() async {
        var matrix = ShopApp.matrix(options: Matrix.Options(isolation: .inProcess))
        let seen = Seen()
        matrix.flow("records") { combination in
            seen.add(
                combination.name, coreOnly: combination.isCoreOnly,
                saleOn: combination.isOn(ShopSwitches.sale), promotionsKilled: combination.isKilled("kill_promotions"))
        }
        let report = await matrix.run(Self.quiet)
        #expect(report.passed)
        let names = seen.names
        #expect(names.count == 512)
        #expect(Set(names).count == 512)
        #expect(names.first == "none")
        #expect(names[1] == "plugin_switch_banner_sale")
        // Sale on but its cross-point group killed: the flow sees it off.
        #expect(seen.saleOnWhilePromotionsKilled == 0)
        // Core only: the master killed, or every switch that is on killed by its groups. Counted independently:
        // gates 0-2 banner, 3-4 checkout, then kill_banner, kill_checkout, kill_promotions (sale, gift wrap), master.
        let coreOnly = (0..<512).filter { index in
            let on = (0..<5).filter { index & (1 << $0) != 0 }
            let killed = { (bit: Int) in index & (1 << bit) != 0 }
            if killed(8) { return true }
            return on.allSatisfy { gate in
                (gate <= 2 && killed(5)) || (gate >= 3 && killed(6)) || ((gate == 0 || gate == 3) && killed(7))
            }
        }.count
        #expect(seen.coreOnly == coreOnly)
    }

    @Test func pointsMissingOnEitherSideOrInAnotherOrderAreReported() async {
        var matrix = Matrix(flags: Shop.flagSet, source: "shop.yaml", options: Matrix.Options(isolation: .inProcess))
        let app = ShopApp()
        matrix.add(app.banner, inputs: [BannerInput(saleRunning: true)])
        matrix.add(
            PluginPoint<BannerInput, String>("side_menu", states: SwitchAssignment.allOff, factories: []),
            inputs: [BannerInput(saleRunning: true)])
        #expect(
            matrix.declarationProblems == [
                "plugin point 'side_menu' is not declared in shop.yaml: add it to plugin_points",
                "plugin point 'checkout_addons' is declared in shop.yaml but not added to the matrix: add it with matrix.add(...) so its combinations are checked",
            ])
        let report = await matrix.run(Self.quiet)
        #expect(report.findings(.declaration).count == 2)
        #expect(report.findings.count == 2)
    }

    @Test func aShardRunsItsSliceAndTheShardsTogetherRunEverything() async throws {
        let matrix = ShopApp.matrix(
            ShopApp.Faults(bannerOrder: [ShopSwitches.news, ShopSwitches.sale, ShopSwitches.tips]),
            options: Matrix.Options(isolation: .inProcess))
        let whole = await matrix.run(Self.quiet)
        var checked: UInt64 = 0
        var failing: UInt64 = 0
        for shard in try Shard.split(into: 3) {
            let report = await matrix.run(
                Matrix.RunSettings(
                    environment: ["SWITCHYARD_MATRIX_SHARD": shard.description],
                    progressBar: false))
            #expect(report.shard == shard)
            #expect(report.range == shard.range(of: 512))
            checked += report.checked
            failing += report.findings(.fallbackOrder).first?.failingCombinations ?? 0
            // Each shard shrinks what it found to the same smallest combination.
            if let finding = report.findings(.fallbackOrder).first {
                #expect(finding.combination == "plugin_switch_banner_sale,plugin_switch_banner_news")
            }
        }
        #expect(checked == 512)
        #expect(failing == whole.findings(.fallbackOrder).first?.failingCombinations)
    }

    @Test func aBadShardOrAnUnknownGateIsASetupFailureNamingTheVariable() async {
        let matrix = ShopApp.matrix(options: Matrix.Options(isolation: .inProcess))
        let shard = await matrix.run(
            Matrix.RunSettings(environment: ["SWITCHYARD_MATRIX_SHARD": "4/3"], progressBar: false))
        #expect(
            shard.findings.map(\.message) == [
                "SWITCHYARD_MATRIX_SHARD: shard 4/3 does not exist: write i/n with 1 <= i <= n, e.g. 1/4"
            ])
        #expect(shard.checked == 0)
        let gate = await matrix.run(Matrix.RunSettings(combination: "plugin_switch_gift_wrapp", environment: [:]))
        #expect(gate.findings.map(\.check) == [.setup])
        #expect(
            gate.findings.first?.message
                == "SWITCHYARD_MATRIX_COMBINATION: 'plugin_switch_gift_wrapp' is neither a plugin switch "
                + "nor a kill switch of the namespace; did you mean 'plugin_switch_gift_wrap'?")
    }

    @Test func aPinnedCombinationRunsAloneAndSaysWhatEachPointServed() async {
        let matrix = ShopApp.matrix(options: Matrix.Options(isolation: .inProcess))
        let report = await matrix.run(
            Matrix.RunSettings(
                environment: [
                    "SWITCHYARD_MATRIX_COMBINATION": "plugin_switch_banner_news,plugin_switch_insurance,kill_checkout"
                ]))
        #expect(report.checked == 1)
        #expect(report.passed)
        #expect(
            report.notes == [
                "only the combination SWITCHYARD_MATRIX_COMBINATION=plugin_switch_banner_news,plugin_switch_insurance,kill_checkout ran: "
                    + "on plugin_switch_banner_news, plugin_switch_insurance; killed kill_checkout",
                "switches the plugin points see on: plugin_switch_banner_news",
                "banner (input sale running): served plugin_switch_banner_news",
                "banner (input no sale): served plugin_switch_banner_news",
                "checkout_addons (input insurable order): served the core flow",
                "checkout_addons (input uninsurable order): served the core flow",
            ])
    }

    @Test func progressGoesToTheFileFlagctlReadsAndTheBarReadsWell() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("matrix-progress-\(UUID().uuidString)")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let matrix = ShopApp.matrix(options: Matrix.Options(isolation: .inProcess))
        _ = await matrix.run(Matrix.RunSettings(environment: ["SWITCHYARD_MATRIX_PROGRESS": path], progressBar: false))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "512 512\n")
    }

    @Test func theRiderFlagFileIsFoundFromThePackageRoot() throws {
        let matrix = try Matrix(flagFile: "Flags/rider.yaml")
        #expect(matrix.flagSet.namespace == "rider")
        #expect(try matrix.plan().total == 131_072)
        #expect(throws: (any Error).self) { try Matrix(flagFile: "Flags/no-such-file.yaml") }
    }

    @Test func checkRecordsAnIssuePerFailingCheck() async {
        let matrix = ShopApp.matrix(
            ShopApp.Faults(bannerOrder: [ShopSwitches.news, ShopSwitches.sale, ShopSwitches.tips]),
            options: Matrix.Options(isolation: .inProcess))
        await withKnownIssue("the banner's factories are in the wrong order") {
            let report = await matrix.check(Self.quiet)
            #expect(report.findings.map(\.check) == [.declaration, .fallbackOrder])
        }
    }
}

/// What a flow saw, from any thread.
final class Seen: @unchecked Sendable {
    private let lock = NSLock()
    private var _names: [String] = []
    private var _coreOnly = 0
    private var _saleOnWhilePromotionsKilled = 0

    func add(_ name: String, coreOnly: Bool, saleOn: Bool, promotionsKilled: Bool) {
        lock.withLock {
            _names.append(name)
            if coreOnly { _coreOnly += 1 }
            if saleOn && promotionsKilled { _saleOnWhilePromotionsKilled += 1 }
        }
    }

    var names: [String] { lock.withLock { _names } }
    var coreOnly: Int { lock.withLock { _coreOnly } }
    var saleOnWhilePromotionsKilled: Int { lock.withLock { _saleOnWhilePromotionsKilled } }
}
