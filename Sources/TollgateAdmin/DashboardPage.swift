import Foundation
import TollgateCore
import TollgateSQLite

/// The web dashboard: the terminal dashboard's tables and the charts, one self-contained page
/// (no external script, style or font) that refreshes its content from `/fragment` every few seconds.
enum DashboardPage {
    /// The whole page.
    /// - Parameters:
    ///   - snapshot: What to draw.
    ///   - databaseName: How the database is named (a path, or `host:port/database`; never a password).
    ///   - refreshSeconds: Seconds between refreshes.
    ///   - nonce: The script's nonce, named by the page's `Content-Security-Policy`.
    /// - Returns: The HTML.
    static func page(_ snapshot: OperatorsSnapshot, databaseName: String, refreshSeconds: Int, nonce: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Tollgate · \(HTMLText.escape(databaseName))</title>
        <style nonce="\(nonce)">
        body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 16px 24px; color: #212121; background: #fafafa; }
        h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 18px 0 6px; }
        .meta { color: #616161; margin-bottom: 8px; }
        .grid { display: flex; flex-wrap: wrap; gap: 16px; }
        .card { background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; padding: 10px 12px; }
        table { border-collapse: collapse; } td, th { padding: 2px 10px 2px 0; text-align: left; font-variant-numeric: tabular-nums; }
        th { color: #616161; font-weight: 600; } .num { text-align: right; }
        .open { color: #c62828; font-weight: 600; } .half_open { color: #f9a825; font-weight: 600; } .closed { color: #2e7d32; }
        svg text { font: 11px system-ui, sans-serif; fill: #424242; } svg .label { font-size: 12px; }
        .key { display: inline-block; width: 18px; height: 0; border-top: 2px solid; vertical-align: middle; margin: 0 4px 0 10px; }
        .swatch { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 10px; vertical-align: middle; }
        .swatch.hits { background: #2e7d32; } .swatch.revalidations { background: #66bb6a; } .swatch.misses { background: #1565c0; }
        .swatch.stale { background: #ef6c00; } .swatch.coalesced { background: #8e24aa; } .key.rate { border-color: #212121; }
        .key.used { border-color: #1565c0; } .key.limit { border-color: #c62828; } .key.forecast { border-color: #ef6c00; border-top-style: dashed; }
        </style></head>
        <body><div id="dashboard">\(fragment(snapshot, databaseName: databaseName))</div>
        <script nonce="\(nonce)">
        (function () {
          var query = window.location.search;
          setInterval(function () {
            fetch("fragment" + query, { cache: "no-store" })
              .then(function (answer) { return answer.ok ? answer.text() : null; })
              .then(function (html) { if (html !== null) { document.getElementById("dashboard").innerHTML = html; } })
              .catch(function () {});
          }, \(refreshSeconds * 1000));
        })();
        </script></body></html>
        """
    }

    /// The page's content, which the page's script fetches again to refresh itself.
    static func fragment(_ snapshot: OperatorsSnapshot, databaseName: String) -> String {
        let dashboard = snapshot.dashboard
        let dayLength = dashboard.resetsAt.timeIntervalSince(snapshot.dayStart)
        let elapsed = dashboard.takenAt.timeIntervalSince(snapshot.dayStart)
        var html = "<h1>Tollgate</h1>"
        html += #"<div class="meta">\#(HTMLText.escape(databaseName)) · \#(HTMLText.escape(PacificDay.localTimeDescription(of: dashboard.takenAt))) · quota day \#(dashboard.pacificDate) · resets in \#(duration(dashboard.resetsAt.timeIntervalSince(dashboard.takenAt))) · cache hit rate today \#(dashboard.cacheHitRate.map { percent($0) } ?? "–")</div>"#

        html += "<h2>Quota today</h2><div class=\"grid\">"
        for series in snapshot.burn {
            let forecast = snapshot.forecast(of: series.bucket)
            let runsOut = forecast?.runsOutAt.map { "runs out at " + PacificDay.localTimeDescription(of: $0) }
                ?? ((forecast?.unitsPerHour ?? 0) > 0 ? "lasts until the reset" : "nothing spent in the last hour")
            html += #"<div class="card"><b>\#(HTMLText.escape(series.bucket))</b> · \#(HTMLText.grouped(series.used)) / \#(HTMLText.grouped(series.limit)) units · \#(String(format: "%.0f", forecast?.unitsPerHour ?? 0)) u/h · \#(runsOut)<br>"#
            html += DashboardCharts.burn(series, forecast: forecast, dayLength: dayLength, elapsed: elapsed)
            html += #"<div class="meta"><span class="key used"></span>used<span class="key limit"></span>limit<span class="key forecast"></span>forecast at the last hour's rate</div></div>"#
        }
        if snapshot.burn.isEmpty { html += #"<div class="card meta">no buckets yet</div>"# }
        html += "</div>"

        html += "<div class=\"grid\">"
        html += #"<div class="card"><h2>Buckets</h2><table><tr><th>bucket</th><th class="num">used</th><th class="num">limit</th><th class="num">left</th><th>top endpoints</th></tr>"#
        for bucket in dashboard.buckets {
            let endpoints = bucket.endpoints.prefix(3).map { "\($0.endpoint) \(HTMLText.grouped($0.units))u" }.joined(separator: ", ")
            html += "<tr><td>\(HTMLText.escape(bucket.bucket))\(bucket.window.map { " <small>per \(HTMLText.escape($0))</small>" } ?? "")\(bucket.exhaustedUntil == nil ? "" : #" <span class="open">EXHAUSTED</span>"#)</td><td class=\"num\">\(HTMLText.grouped(bucket.used))</td><td class=\"num\">\(HTMLText.grouped(bucket.limit))</td><td class=\"num\">\(HTMLText.grouped(bucket.remaining))</td><td>\(HTMLText.escape(endpoints))</td></tr>"
        }
        html += "</table></div>"
        html += #"<div class="card"><h2>Top endpoints by units today</h2>\#(DashboardCharts.topEndpoints(snapshot.topEndpoints))</div>"#
        html += "</div>"

        html += "<div class=\"grid\">"
        html += #"<div class="card"><h2>Cache answers, last \#(OperatorsSnapshot.cacheDayCount) days</h2>\#(DashboardCharts.cache(snapshot.cacheDays))<div class="meta"><span class="swatch hits"></span>hits<span class="swatch revalidations"></span>304<span class="swatch misses"></span>misses<span class="swatch stale"></span>stale<span class="swatch coalesced"></span>coalesced<span class="key rate"></span>hit rate (0–100%)</div><div class="meta">\#(HTMLText.grouped(dashboard.cacheEntries)) entries · \#(HTMLText.grouped(dashboard.cacheBodyBytes)) body bytes</div></div>"#
        html += #"<div class="card"><h2>Circuits, last 24 hours</h2>\#(DashboardCharts.circuits(snapshot.circuitTransitions, circuits: dashboard.circuits, now: dashboard.takenAt))"#
        html += "<table><tr><th>endpoint</th><th>state</th><th class=\"num\">failures</th><th class=\"num\">retry in</th><th class=\"num\">trips</th></tr>"
        for circuit in dashboard.circuits {
            html += "<tr><td>\(HTMLText.escape(circuit.endpoint))</td><td class=\"\(HTMLText.escape(circuit.state))\">\(HTMLText.escape(circuit.state.replacingOccurrences(of: "_", with: "-").uppercased()))</td><td class=\"num\">\(circuit.consecutiveFailures)/\(circuit.failureThreshold)</td><td class=\"num\">\(circuit.state == "open" ? "\(circuit.retryInSeconds)s" : "")</td><td class=\"num\">\(circuit.trips)</td></tr>"
        }
        html += "</table></div></div>"

        html += "<div class=\"grid\">"
        html += #"<div class="card"><h2>Throttles</h2><table><tr><th>endpoint</th><th class="num">in window</th><th class="num">limit</th><th class="num">window</th></tr>"#
        for throttle in dashboard.throttles {
            html += "<tr><td>\(HTMLText.escape(throttle.endpoint))</td><td class=\"num\">\(throttle.count)\(throttle.remaining == 0 ? #" <span class="open">FULL</span>"# : "")</td><td class=\"num\">\(throttle.limit)</td><td class=\"num\">\(HTMLText.coordinate(throttle.windowSeconds))s</td></tr>"
        }
        html += "</table></div>"
        html += #"<div class="card"><h2>Cache today</h2><table><tr><th>endpoint</th><th class="num">hits</th><th class="num">304</th><th class="num">misses</th><th class="num">stale</th><th class="num">hit rate</th></tr>"#
        for day in dashboard.cache {
            html += "<tr><td>\(HTMLText.escape(day.endpoint))</td><td class=\"num\">\(day.hits)</td><td class=\"num\">\(day.revalidations)</td><td class=\"num\">\(day.misses)</td><td class=\"num\">\(day.stale)</td><td class=\"num\">\(day.hitRate.map { percent($0) } ?? "–")</td></tr>"
        }
        html += "</table></div>"
        html += #"<div class="card"><h2>Latest ledger events</h2><table><tr><th>time (PT)</th><th>kind</th><th>endpoint</th><th class="num">units</th></tr>"#
        for event in dashboard.recentLedgerEvents {
            html += "<tr><td>\(HTMLText.escape(PacificDay.localTimeDescription(of: event.at)))</td><td>\(HTMLText.escape(event.kind))</td><td>\(HTMLText.escape(event.endpoint))</td><td class=\"num\">\(event.units)</td></tr>"
        }
        html += "</table></div></div>"
        html += freshnessCard(dashboard.freshness ?? [])
        return html
    }

    /// The freshness in force per endpoint and why; nothing when no `fresh_for` is chosen (the
    /// cache is then RFC 9111 alone).
    static func freshnessCard(_ rows: [FreshnessInForce]) -> String {
        guard !rows.isEmpty else { return "" }
        var html = #"<div class="grid"><div class="card" id="freshness"><h2>Freshness in force (fresh_for)</h2><table><tr><th>endpoint</th><th>bucket</th><th class="num">fresh for</th><th>chosen</th><th>why</th><th>decided</th></tr>"#
        for row in rows {
            let decided = switch row.decidedBy {
            case .description: "by the description"
            case .gate: "by this gate" + (row.decidedAt.map { " at " + PacificDay.localTimeDescription(of: $0) } ?? "")
            case .ledger: "from the ledger now"
            }
            html += "<tr><td>\(HTMLText.escape(row.endpoint == "*" ? "every other endpoint" : row.endpoint))</td><td>\(HTMLText.escape(row.bucket))</td><td class=\"num\">\(duration(row.lifetimeSeconds))</td><td>\(HTMLText.escape(row.chosen))</td><td class=\"\(row.reason == .fixed || row.reason == .budgetLasts ? "closed" : "half_open")\">\(HTMLText.escape(row.why))</td><td>\(HTMLText.escape(decided))</td></tr>"
        }
        html += "</table></div></div>"
        return html
    }

    static func percent(_ fraction: Double) -> String {
        String(format: "%.1f%%", fraction * 100)
    }

    static func duration(_ seconds: TimeInterval) -> String {
        let total = max(0, Int(seconds.rounded()))
        let hours = total / 3600, minutes = total % 3600 / 60
        return hours > 0 ? "\(hours)h \(minutes)m" : "\(minutes)m \(total % 60)s"
    }
}
