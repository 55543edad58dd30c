import Testing
import Tollgate

@Suite("What a 304 costs")
struct NotModifiedCostTests {
    @Test("only a 304 changes a charge: free is refunded, fewer units settled, as many or full kept")
    func rule() {
        for status in [200, 204, 404, 500] {
            #expect(NotModifiedCost.free.charge(forStatus: status, price: 5) == .kept)
            #expect(NotModifiedCost.units(1).charge(forStatus: status, price: 100) == .kept)
        }
        #expect(NotModifiedCost.free.charge(forStatus: 304, price: 5) == .refunded)
        #expect(NotModifiedCost.units(1).charge(forStatus: 304, price: 100) == .settled(units: 1))
        #expect(NotModifiedCost.units(1).charge(forStatus: 304, price: 1) == .kept)
        #expect(NotModifiedCost.units(7).charge(forStatus: 304, price: 5) == .kept, "never more than the call")
        #expect(NotModifiedCost.units(0).charge(forStatus: 304, price: 0) == .kept, "nothing charged, nothing to give back")
        #expect(NotModifiedCost.full.charge(forStatus: 304, price: 50) == .kept)
    }

    @Test("the units a 304 costs, for a call of a given price")
    func units() {
        #expect(NotModifiedCost.units(1).units(ofCallPriced: 100) == 1)
        #expect(NotModifiedCost.units(1).units(ofCallPriced: 0) == 0)
        #expect(NotModifiedCost.free.units(ofCallPriced: 50) == 0)
        #expect(NotModifiedCost.full.units(ofCallPriced: 50) == 50)
        #expect(NotModifiedCost.units(1).description == "1")
        #expect(NotModifiedCost.full.description == "full")
    }
}
