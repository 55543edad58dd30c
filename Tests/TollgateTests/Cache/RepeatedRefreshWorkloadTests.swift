import Foundation
import HTTPTypes
import Testing
import TollgateTestSupport
import Tollgate

/// A synthetic origin: each URL has a version; a conditional request for the current version
/// gets a 304, anything else a 200 with the current ETag and body.
private struct Origin {
    var versions: [String: Int] = [:]

    func answer(_ request: HTTPRequest, url: String) -> (HTTPResponse, Data) {
        let etag = "W/\"\(url.hashValue & 0xFFFF)-\(versions[url, default: 0])\""
        if request.headerFields[.ifNoneMatch] == etag {
            return (response(304, [("ETag", etag)]), Data())
        }
        let body = Data(String(repeating: "\(url) v\(versions[url, default: 0]) ", count: 20).utf8)
        return (response(200, [("ETag", etag), ("Content-Type", "application/json")]), body)
    }
}

@Suite("ETag cache: repeated-refresh workload")
struct RepeatedRefreshWorkloadTests {
    @Test("200 URLs, 20 rounds, 2% changed before each refresh: the refresh rounds' hit rate in cache_stats is at least 97%")
    func repeatedRefresh() async throws {
        // Filled on the evening of one Pacific day, refreshed through the next day, so the view's
        // row for the second day is exactly the refresh rounds.
        let evening = Date(timeIntervalSince1970: 1_795_762_800) // 2026-11-26 23:00 PST
        let fixture = try CacheFixture(start: evening)
        let urls = (0..<200).map { "https://www.googleapis.com/youtube/v3/videos?id=video\($0)&part=snippet,statistics" }
        var origin = Origin()
        var changedPerRound: [Int] = []
        let fillDay = fixture.today

        for round in 1...20 {
            if round > 1 {
                // 2% of the URLs change before the round, a different slice each time.
                let changed = (0..<4).map { urls[((round - 2) * 4 + $0 * 53) % urls.count] }
                for url in changed { origin.versions[url, default: 0] += 1 }
                changedPerRound.append(Set(changed).count)
            }
            for url in urls {
                let lookup = try await fixture.cache.lookup(request(url), endpoint: "videos.list")
                let sent = try #require(lookup.requestToSend)
                let (answer, body) = origin.answer(sent, url: url)
                if answer.status.code == 304 {
                    let revalidated = try await fixture.cache.revalidated(answer, for: sent, endpoint: "videos.list")
                    #expect(revalidated?.body == lookup.cachedResponse?.body)
                } else {
                    try await fixture.cache.storeResponse(answer, body: body, for: sent, endpoint: "videos.list")
                }
            }
            if round == 1 { fixture.clock.set(to: evening.addingTimeInterval(3 * 3600)) } // 02:00 the next day
            fixture.clock.advance(by: .seconds(600))
        }
        #expect(changedPerRound == Array(repeating: 4, count: 19))

        let refreshDay = fillDay.next
        #expect(PacificDay(containing: fixture.clock.now()) == refreshDay)
        try await fixture.cache.flush() // the last uses' counts wait in memory, as hits do
        let rows = try fixture.query("SELECT pacific_date, hits, revalidations, misses, hit_rate FROM cache_stats ORDER BY pacific_date")
        #expect(rows.map { $0[0].string } == [fillDay.key, refreshDay.key])
        #expect(rows[0][3].int == 200, "the first round fills the cache")
        #expect(rows[1][2].int == 19 * 196)
        #expect(rows[1][3].int == 19 * 4)
        let hitRate = try #require(rows[1][4].double)
        #expect(hitRate >= 0.97)
        #expect(hitRate == 0.98, "the workload's ceiling")
        #expect(try await fixture.cache.totals().entries == 200)
    }
}
