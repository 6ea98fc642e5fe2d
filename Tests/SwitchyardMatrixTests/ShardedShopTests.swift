import Foundation
import SwitchyardMatrix
import Testing

/// The shop's matrix as an app's test target runs it: settings from the environment (`SWITCHYARD_MATRIX_SHARD`,
/// `SWITCHYARD_MATRIX_PROGRESS`). `flagctl matrix run` drives this test in shards (FlagctlTests); with
/// `SHOP_MATRIX_FAULT=order` it builds the banner with its fallback order reversed, so the shards fail.
struct ShardedShopTests {
    @Test func theShopMatrixRunsTheShardItIsGiven() async {
        var faults = ShopApp.Faults()
        if ProcessInfo.processInfo.environment["SHOP_MATRIX_FAULT"] == "order" {
            faults.bannerOrder = [ShopSwitches.news, ShopSwitches.sale, ShopSwitches.tips]
        }
        let report = await ShopApp.matrix(faults).check()
        #expect(report.checked == UInt64(report.range.count))
    }
}
