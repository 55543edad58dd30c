import Foundation
import Testing
@testable import Tollgate

/// The rule by which the request machine's actions compare the errors they carry.
@Suite("An error the machine passes on, compared as a value")
struct ErrorValueTests {
    /// An error type that is not `Equatable`, as a foreign store's may be.
    struct Opaque: Error, CustomStringConvertible {
        let text: String
        var description: String { text }
    }

    @Test("an Equatable error compares by its own ==: the same refusal with another Retry-After differs")
    func equatableByValue() {
        #expect(ErrorValue(TollgateError.throttled(retryAfter: 1)) == ErrorValue(TollgateError.throttled(retryAfter: 1)))
        #expect(ErrorValue(TollgateError.throttled(retryAfter: 1)) != ErrorValue(TollgateError.throttled(retryAfter: 2)))
        #expect(ErrorValue(TollgateError.throttled(retryAfter: 1)) != ErrorValue(TollgateError.circuitOpen(retryAfter: 1)))
    }

    @Test("errors of different types differ, whatever they say")
    func typesDiffer() {
        #expect(ErrorValue(Opaque(text: "x")) != ErrorValue(StoreRefusal.invalidArgument("x")))
        #expect(ErrorValue(CancellationError()) != ErrorValue(Opaque(text: "CancellationError()")))
    }

    @Test("an error that is not Equatable compares by what it says")
    func opaqueByDescription() {
        #expect(ErrorValue(CancellationError()) == ErrorValue(CancellationError()))
        #expect(ErrorValue(Opaque(text: "disk full")) == ErrorValue(Opaque(text: "disk full")))
        #expect(ErrorValue(Opaque(text: "disk full")) != ErrorValue(Opaque(text: "locked")))
    }
}
