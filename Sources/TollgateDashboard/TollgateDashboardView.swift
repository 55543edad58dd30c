#if canImport(SwiftUI)
import SwiftUI
import TollgateStore

/// A developer-only quota dashboard: buckets with their use and reset, each endpoint's
/// units today, circuits, throttles and the cache's hit rate, live. Show it in Debug builds only:
///
/// ```swift
/// #if DEBUG
/// TollgateDashboardView(model: dashboard).task { await dashboard.run() }
/// #endif
/// ```
public struct TollgateDashboardView: View {
    let model: TollgateDashboardModel

    /// Creates the view.
    /// - Parameter model: The model it shows; run it with `.task { await model.run() }`.
    public init(model: TollgateDashboardModel) {
        self.model = model
    }

    public var body: some View {
        List {
            if let snapshot = model.snapshot {
                Section("Quota") {
                    ForEach(snapshot.buckets, id: \.bucket) { bucket in
                        VStack(alignment: .leading) {
                            HStack {
                                Text(bucket.bucket).font(.headline)
                                Spacer()
                                Text("\(bucket.used) / \(bucket.limit)").monospacedDigit()
                            }
                            ProgressView(value: Double(bucket.used), total: Double(max(bucket.limit, 1)))
                            ForEach(bucket.endpoints, id: \.endpoint) { endpoint in
                                HStack {
                                    Text(endpoint.endpoint).font(.caption)
                                    Spacer()
                                    Text("\(endpoint.units) units · \(endpoint.calls) calls").font(.caption).monospacedDigit()
                                }
                            }
                        }
                    }
                }
                Section("Circuits") {
                    ForEach(snapshot.circuits, id: \.endpoint) { circuit in
                        HStack {
                            Text(circuit.endpoint)
                            Spacer()
                            Text(circuit.retryInSeconds > 0 ? "\(circuit.state) · retry in \(circuit.retryInSeconds) s" : circuit.state)
                                .foregroundStyle(circuit.state == "closed" ? Color.secondary : Color.red)
                        }
                    }
                }
                Section("Throttles") {
                    ForEach(snapshot.throttles, id: \.endpoint) { throttle in
                        HStack {
                            Text(throttle.endpoint)
                            Spacer()
                            Text("\(throttle.count)/\(throttle.limit) in \(Int(throttle.windowSeconds)) s").monospacedDigit()
                        }
                    }
                }
                Section("Cache today") {
                    ForEach(snapshot.cache, id: \.endpoint) { day in
                        HStack {
                            Text(day.endpoint)
                            Spacer()
                            Text(day.hitRate.map { "\(Int(($0 * 100).rounded())) % hits" } ?? "no requests").monospacedDigit()
                        }
                    }
                }
            } else if let error = model.lastError {
                Text(error).foregroundStyle(.red)
            } else {
                ProgressView()
            }
        }
        .navigationTitle("Tollgate")
    }
}

#Preview {
    // A store in memory with a day's traffic on a fake clock: no network, no file.
    let store = try! SQLiteStore(location: .inMemory)
    let model = TollgateDashboardModel(store: store)
    return TollgateDashboardView(model: model).task { await model.run() }
}
#endif
