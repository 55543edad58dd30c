import Foundation
import TollgateCore
import TollgateSQLite

/// The web dashboard's charts as SVG drawn on the server: no script is needed to see them, and
/// each mark carries its data (`data-*` attributes) so that a test reading the rendered page can
/// check every point.
enum DashboardCharts {
    static let width = 560.0
    static let height = 220.0
    /// The plot area inside the axes.
    static let left = 56.0, right = 16.0, top = 14.0, bottom = 30.0
    static var plotWidth: Double { width - left - right }
    static var plotHeight: Double { height - top - bottom }

    static let stateColours = ["closed": "#2e7d32", "open": "#c62828", "half_open": "#f9a825"]

    // MARK: Burn

    /// One bucket's day: cumulative units against time since the Pacific midnight, the limit as a
    /// line, and the forecast at the last hour's rate dashed from now to where it leads.
    static func burn(_ series: OperatorsSnapshot.BurnSeries, forecast: OperatorsSnapshot.Forecast?,
                     dayLength: Double, elapsed: Double) -> String {
        let rate = forecast?.unitsPerHour ?? 0
        var forecastEnd: (seconds: Double, units: Double)?
        if rate > 0 {
            let exhaustion = elapsed + Double(max(0, series.limit - series.used)) / rate * 3600
            forecastEnd = exhaustion < dayLength
                ? (exhaustion, Double(series.limit))
                : (dayLength, Double(series.used) + rate * (dayLength - elapsed) / 3600)
        }
        let peak = max(Double(series.limit), Double(series.used), forecastEnd?.units ?? 0, 1) * 1.08
        func x(_ seconds: Double) -> Double { left + plotWidth * min(max(seconds / dayLength, 0), 1) }
        func y(_ units: Double) -> Double { top + plotHeight * (1 - min(max(units / peak, 0), 1)) }

        var svg = open(class: "chart burn", label: "Units used today in \(series.bucket)", data: [
            "bucket": series.bucket, "limit": String(series.limit), "used": String(series.used),
            "day-seconds": HTMLText.coordinate(dayLength),
        ])
        svg += axes(yMax: peak, yLabel: "units", y: y)
        for hour in stride(from: 0, through: Int(dayLength / 3600), by: 3) {
            let position = x(Double(hour) * 3600)
            svg += #"<text class="tick" x="\#(HTMLText.coordinate(position))" y="\#(HTMLText.coordinate(height - 10))" text-anchor="middle">\#(String(format: "%02d:00", hour % 24))</text>"#
        }
        // The limit.
        svg += #"<line class="limit" data-units="\#(series.limit)" x1="\#(HTMLText.coordinate(left))" y1="\#(HTMLText.coordinate(y(Double(series.limit))))" x2="\#(HTMLText.coordinate(left + plotWidth))" y2="\#(HTMLText.coordinate(y(Double(series.limit))))" stroke="rgb(198,40,40)" stroke-width="1.5"/>"#
        svg += #"<text class="label" x="\#(HTMLText.coordinate(left + plotWidth - 4))" y="\#(HTMLText.coordinate(y(Double(series.limit)) - 4))" text-anchor="end" fill="rgb(198,40,40)">limit \#(HTMLText.grouped(series.limit))</text>"#
        // Cumulative units.
        let points = series.points.map { "\(HTMLText.coordinate(x($0.secondsSinceMidnight))),\(HTMLText.coordinate(y(Double($0.cumulativeUnits))))" }
        let data = series.points.map { "\(HTMLText.coordinate($0.secondsSinceMidnight)):\($0.cumulativeUnits)" }
        svg += #"<polyline class="used" data-points="\#(data.joined(separator: " "))" points="\#(points.joined(separator: " "))" fill="none" stroke="rgb(21,101,192)" stroke-width="2"/>"#
        // The forecast.
        if let forecastEnd {
            svg += #"<line class="forecast" data-from="\#(HTMLText.coordinate(elapsed)):\#(series.used)" data-to="\#(HTMLText.coordinate(forecastEnd.seconds)):\#(HTMLText.coordinate(forecastEnd.units))" data-units-per-hour="\#(HTMLText.coordinate(rate))" x1="\#(HTMLText.coordinate(x(elapsed)))" y1="\#(HTMLText.coordinate(y(Double(series.used))))" x2="\#(HTMLText.coordinate(x(forecastEnd.seconds)))" y2="\#(HTMLText.coordinate(y(forecastEnd.units)))" stroke="rgb(239,108,0)" stroke-width="2" stroke-dasharray="6 4"/>"#
        }
        // Now.
        svg += #"<line class="now" x1="\#(HTMLText.coordinate(x(elapsed)))" y1="\#(HTMLText.coordinate(top))" x2="\#(HTMLText.coordinate(x(elapsed)))" y2="\#(HTMLText.coordinate(top + plotHeight))" stroke="rgb(158,158,158)" stroke-dasharray="2 3"/>"#
        return svg + "</svg>"
    }

    // MARK: Cache

    /// The cache's answers per day, stacked by source, with the hit rate as a line (right axis).
    static func cache(_ days: [OperatorsSnapshot.CacheDay]) -> String {
        let kinds: [(name: String, colour: String, count: (OperatorsSnapshot.CacheDay) -> Int)] = [
            ("hits", "#2e7d32", \.hits), ("revalidations", "#66bb6a", \.revalidations), ("misses", "#1565c0", \.misses),
            ("stale", "#ef6c00", \.stale), ("coalesced", "#8e24aa", \.coalesced),
        ]
        let peak = max(1, days.map { day in kinds.reduce(0) { $0 + $1.count(day) } }.max() ?? 1)
        let scale = Double(peak) * 1.1
        func y(_ value: Double) -> Double { top + plotHeight * (1 - min(max(value / scale, 0), 1)) }
        let slot = plotWidth / Double(max(days.count, 1))
        var svg = open(class: "chart cache", label: "Cache answers per day", data: ["days": String(days.count)])
        svg += axes(yMax: scale, yLabel: "answers", y: y)
        var rate: [String] = []
        for (index, day) in days.enumerated() {
            let x = left + slot * Double(index) + slot * 0.15
            var base = 0
            svg += #"<g class="day" data-date="\#(day.pacificDate)" data-hits="\#(day.hits)" data-revalidations="\#(day.revalidations)" data-misses="\#(day.misses)" data-stale="\#(day.stale)" data-coalesced="\#(day.coalesced)" data-hit-rate="\#(day.hitRate.map { String(format: "%.4f", $0) } ?? "")">"#
            for kind in kinds {
                let count = kind.count(day)
                guard count > 0 else { continue }
                let y0 = y(Double(base)), y1 = y(Double(base + count))
                svg += #"<rect class="\#(kind.name)" x="\#(HTMLText.coordinate(x))" y="\#(HTMLText.coordinate(y1))" width="\#(HTMLText.coordinate(slot * 0.7))" height="\#(HTMLText.coordinate(y0 - y1))" fill="\#(kind.colour)"/>"#
                base += count
            }
            svg += "</g>"
            if index % 2 == (days.count - 1) % 2 {
                svg += #"<text class="tick" x="\#(HTMLText.coordinate(x + slot * 0.35))" y="\#(HTMLText.coordinate(height - 10))" text-anchor="middle">\#(day.pacificDate.suffix(5))</text>"#
            }
            if let hitRate = day.hitRate {
                rate.append("\(HTMLText.coordinate(x + slot * 0.35)),\(HTMLText.coordinate(top + plotHeight * (1 - hitRate)))")
            }
        }
        if !rate.isEmpty {
            svg += #"<polyline class="hit-rate" points="\#(rate.joined(separator: " "))" fill="none" stroke="rgb(33,33,33)" stroke-width="1.5"/>"#
        }
        svg += #"<text class="tick" x="\#(HTMLText.coordinate(width - 2))" y="\#(HTMLText.coordinate(top + 4))" text-anchor="end">100%</text>"#
        return svg + "</svg>"
    }

    // MARK: Circuits

    /// Each endpoint's circuit over the last 24 hours: a band coloured by state, a mark at each
    /// transition.
    static func circuits(_ transitions: [DashboardSnapshot.CircuitTransition], circuits: [DashboardSnapshot.Circuit],
                         now: Date) -> String {
        let start = now.addingTimeInterval(-86_400)
        var endpoints = Array(Set(transitions.map(\.endpoint))).sorted()
        if endpoints.isEmpty { endpoints = circuits.filter { $0.state != "closed" }.map(\.endpoint) }
        let rowHeight = 22.0
        let chartHeight = top + bottom + rowHeight * Double(max(endpoints.count, 1))
        func x(_ date: Date) -> Double { left + 90 + (plotWidth - 90) * min(max(date.timeIntervalSince(start) / 86_400, 0), 1) }
        var svg = open(class: "chart circuits", label: "Circuit transitions in the last 24 hours",
                       data: ["transitions": String(transitions.count)], height: chartHeight)
        if endpoints.isEmpty {
            svg += #"<text class="empty" x="\#(HTMLText.coordinate(width / 2))" y="\#(HTMLText.coordinate(top + 16))" text-anchor="middle">no transitions in the last 24 hours</text>"#
        }
        for (row, endpoint) in endpoints.enumerated() {
            let y = top + rowHeight * Double(row)
            let own = transitions.filter { $0.endpoint == endpoint }.sorted { $0.at < $1.at }
            svg += #"<text class="label" x="\#(HTMLText.coordinate(left + 84))" y="\#(HTMLText.coordinate(y + 15))" text-anchor="end">\#(HTMLText.escape(String(endpoint.prefix(18))))</text>"#
            var state = own.first?.from ?? circuits.first { $0.endpoint == endpoint }?.state ?? "closed"
            var from = start
            for transition in own + [nil] {
                let until = transition?.at ?? now
                svg += #"<rect class="band" data-state="\#(HTMLText.escape(state))" x="\#(HTMLText.coordinate(x(from)))" y="\#(HTMLText.coordinate(y + 4))" width="\#(HTMLText.coordinate(max(0, x(until) - x(from))))" height="14" fill="\#(stateColours[state] ?? "#9e9e9e")" opacity="0.35"/>"#
                if let transition {
                    svg += #"<circle class="transition" data-endpoint="\#(HTMLText.escape(endpoint))" data-at="\#(ISO8601DateFormatter().string(from: transition.at))" data-from="\#(HTMLText.escape(transition.from))" data-to="\#(HTMLText.escape(transition.to))" cx="\#(HTMLText.coordinate(x(transition.at)))" cy="\#(HTMLText.coordinate(y + 11))" r="4" fill="\#(stateColours[transition.to] ?? "#9e9e9e")"><title>\#(HTMLText.escape("\(transition.from) → \(transition.to): \(transition.reason)"))</title></circle>"#
                    state = transition.to
                    from = transition.at
                }
            }
        }
        let axisY = chartHeight - bottom + 4
        for hoursAgo in stride(from: 24, through: 0, by: -6) {
            let position = x(now.addingTimeInterval(-Double(hoursAgo) * 3600))
            svg += #"<text class="tick" x="\#(HTMLText.coordinate(position))" y="\#(HTMLText.coordinate(axisY + 14))" text-anchor="middle">\#(hoursAgo == 0 ? "now" : "-\(hoursAgo)h")</text>"#
        }
        return svg + "</svg>"
    }

    // MARK: Top endpoints

    /// The endpoints that spent the most units today, as horizontal bars.
    static func topEndpoints(_ endpoints: [OperatorsSnapshot.EndpointUnits]) -> String {
        let rowHeight = 22.0
        let chartHeight = top + 10 + rowHeight * Double(max(endpoints.count, 1))
        let peak = Double(max(endpoints.map(\.units).max() ?? 1, 1))
        var svg = open(class: "chart top-endpoints", label: "Top endpoints by units today",
                       data: ["endpoints": String(endpoints.count)], height: chartHeight)
        if endpoints.isEmpty {
            svg += #"<text class="empty" x="\#(HTMLText.coordinate(width / 2))" y="\#(HTMLText.coordinate(top + 16))" text-anchor="middle">nothing spent today</text>"#
        }
        let barLeft = left + 120
        for (row, endpoint) in endpoints.enumerated() {
            let y = top + rowHeight * Double(row)
            let length = (width - right - barLeft - 130) * Double(endpoint.units) / peak
            svg += #"<g class="endpoint" data-endpoint="\#(HTMLText.escape(endpoint.endpoint))" data-bucket="\#(HTMLText.escape(endpoint.bucket))" data-units="\#(endpoint.units)" data-calls="\#(endpoint.calls)">"#
            svg += #"<text class="label" x="\#(HTMLText.coordinate(barLeft - 6))" y="\#(HTMLText.coordinate(y + 15))" text-anchor="end">\#(HTMLText.escape(String(endpoint.endpoint.prefix(24))))</text>"#
            svg += #"<rect x="\#(HTMLText.coordinate(barLeft))" y="\#(HTMLText.coordinate(y + 4))" width="\#(HTMLText.coordinate(max(1, length)))" height="14" fill="rgb(21,101,192)"/>"#
            svg += #"<text class="value" x="\#(HTMLText.coordinate(barLeft + length + 6))" y="\#(HTMLText.coordinate(y + 15))">\#(HTMLText.grouped(endpoint.units)) u · \#(HTMLText.grouped(endpoint.calls)) calls</text>"#
            svg += "</g>"
        }
        return svg + "</svg>"
    }

    // MARK: Parts

    private static func open(class name: String, label: String, data: [String: String], height: Double = height) -> String {
        let attributes = data.sorted { $0.key < $1.key }.map { #" data-\#($0.key)="\#(HTMLText.escape($0.value))""# }.joined()
        return #"<svg class="\#(name)"\#(attributes) role="img" aria-label="\#(HTMLText.escape(label))" viewBox="0 0 \#(HTMLText.coordinate(width)) \#(HTMLText.coordinate(height))" width="\#(HTMLText.coordinate(width))" height="\#(HTMLText.coordinate(height))" xmlns="http://www.w3.org/2000/svg">"#
    }

    private static func axes(yMax: Double, yLabel: String, y: (Double) -> Double) -> String {
        var svg = #"<line class="axis" x1="\#(HTMLText.coordinate(left))" y1="\#(HTMLText.coordinate(top))" x2="\#(HTMLText.coordinate(left))" y2="\#(HTMLText.coordinate(top + plotHeight))" stroke="rgb(97,97,97)"/>"#
        svg += #"<line class="axis" x1="\#(HTMLText.coordinate(left))" y1="\#(HTMLText.coordinate(top + plotHeight))" x2="\#(HTMLText.coordinate(left + plotWidth))" y2="\#(HTMLText.coordinate(top + plotHeight))" stroke="rgb(97,97,97)"/>"#
        for fraction in [0.0, 0.25, 0.5, 0.75, 1.0] {
            let value = yMax / 1.08 * fraction
            svg += #"<text class="tick" x="\#(HTMLText.coordinate(left - 6))" y="\#(HTMLText.coordinate(y(value) + 4))" text-anchor="end">\#(HTMLText.grouped(Int(value.rounded())))</text>"#
        }
        svg += #"<text class="tick" x="\#(HTMLText.coordinate(left))" y="\#(HTMLText.coordinate(top - 3))" text-anchor="start">\#(yLabel)</text>"#
        return svg
    }
}
