import SwitchyardMatrix
import SwitchyardPlugins

/// The shop's plugin switches, as its code names them.
enum ShopSwitches {
    static let sale = PluginSwitch("plugin_switch_banner_sale")
    static let news = PluginSwitch("plugin_switch_banner_news")
    static let tips = PluginSwitch("plugin_switch_banner_tips")
    static let giftWrap = PluginSwitch("plugin_switch_gift_wrap")
    static let insurance = PluginSwitch("plugin_switch_insurance")
}

/// What the banner point routes: the sale banner applies only while a sale runs.
struct BannerInput: CustomStringConvertible {
    var saleRunning: Bool
    var description: String { saleRunning ? "sale running" : "no sale" }
}

/// What the checkout add-ons route: insurance applies only to insurable orders.
struct CheckoutInput: CustomStringConvertible {
    var insurable: Bool
    var description: String { insurable ? "insurable order" : "uninsurable order" }
}

struct InsuranceUnavailable: Error, CustomStringConvertible {
    var description: String { "the insurer's quote service is down" }
}

/// The shop's plugin points, correct unless told otherwise.
struct ShopApp {
    /// Faults to build in.
    struct Faults {
        /// Factory order of the banner point (the flag file says sale, news, tips).
        var bannerOrder = [ShopSwitches.sale, ShopSwitches.news, ShopSwitches.tips]
        /// The tips banner's factory traps when it builds.
        var tipsTraps = false
        /// The insurance factory throws for insurable orders.
        var insuranceThrows = false
    }

    let banner: PluginPoint<BannerInput, String>
    let checkout: PluginPoint<CheckoutInput, String>

    init(states: any SwitchStates = SwitchAssignment.allOff, faults: Faults = Faults()) {
        let tipsTraps = faults.tipsTraps
        let factories: [PluginSwitch: any PluginFactory<BannerInput, String>] = [
            ShopSwitches.sale: PluginFactoryOf(ShopSwitches.sale, isApplicable: { $0.saleRunning }) { _ in "sale banner"
            },
            ShopSwitches.news: PluginFactoryOf(ShopSwitches.news) { _ in "news banner" },
            ShopSwitches.tips: PluginFactoryOf(ShopSwitches.tips) { _ in
                if tipsTraps {
                    let tips: [String] = []
                    let today = tips.count + 3
                    return tips[today]  // out of range: traps
                }
                return "tips banner"
            },
        ]
        banner = PluginPoint("banner", states: states, factories: faults.bannerOrder.map { factories[$0]! })
        let insuranceThrows = faults.insuranceThrows
        checkout = PluginPoint(
            "checkout_addons", states: states,
            factories: [
                PluginFactoryOf(ShopSwitches.giftWrap) { _ in "gift wrap" },
                PluginFactoryOf(ShopSwitches.insurance, isApplicable: { $0.insurable }) { input in
                    if insuranceThrows && input.insurable { throw InsuranceUnavailable() }
                    return "insurance"
                },
            ])
    }

    /// Checks out: the page lists the add-ons that serve, below the order (core).
    func checkoutPage(_ input: CheckoutInput) -> [String] {
        ["order"] + checkout.createPlugins(for: input)
    }

    /// A matrix of the shop with its two points added.
    static func matrix(_ faults: Faults = Faults(), options: Matrix.Options = Matrix.Options()) -> Matrix {
        var matrix = Matrix(flags: Shop.flagSet, source: "shop.yaml", options: options)
        let app = ShopApp(faults: faults)
        matrix.add(app.banner, inputs: [BannerInput(saleRunning: true), BannerInput(saleRunning: false)])
        matrix.add(
            app.checkout, inputs: [CheckoutInput(insurable: true), CheckoutInput(insurable: false)],
            serving: .everyEligible)
        return matrix
    }
}
