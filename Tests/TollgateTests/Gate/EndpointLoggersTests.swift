import Logging
import Testing
import TollgateTestSupport
@testable import Tollgate

@Suite("The gate's logger per endpoint")
struct EndpointLoggersTests {
    @Test("each endpoint's logger carries its name and the base logger's own metadata, each time it is asked for")
    func metadataPerEndpoint() {
        let capture = LogCapture()
        var base = capture.logger
        base[metadataKey: "app"] = "tests"
        let loggers = EndpointLoggers(base: base)
        loggers.logger(for: "videos.list").info("one")
        loggers.logger(for: "search.list").info("two")
        loggers.logger(for: "videos.list").info("three")
        let metadata = capture.entries.map { $0.metadata }
        #expect(metadata.map { $0["gate.endpoint"] } == ["videos.list", "search.list", "videos.list"])
        #expect(metadata.allSatisfy { $0["app"] == "tests" })
    }

    @Test("past its capacity, an endpoint not kept still gets its metadata, and a kept one still answers")
    func pastCapacity() {
        let capture = LogCapture()
        let loggers = EndpointLoggers(base: capture.logger)
        for index in 0..<EndpointLoggers.capacity { _ = loggers.logger(for: "endpoint.\(index)") }
        loggers.logger(for: "one.more").info("past capacity")
        loggers.logger(for: "endpoint.0").info("kept")
        #expect(capture.entries.map { $0.metadata["gate.endpoint"] } == ["one.more", "endpoint.0"])
    }
}
