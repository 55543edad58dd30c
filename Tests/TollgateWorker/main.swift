// A helper executable for tests that need several real processes on one database file:
// `tollgate-worker <job> [arguments…]`. Each job lives in a file of its own in this folder and
// prints one line of results that the test parses. Not a product: tests only.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
guard let job = arguments.first else {
    FileHandle.standardError.write(Data("usage: tollgate-worker <job> [arguments…]\n".utf8))
    exit(64)
}

do {
    switch job {
    case "migrate":
        try MigrateJob.run(Array(arguments.dropFirst()))
    case "quota-reserve":
        try await QuotaReserveJob.run(Array(arguments.dropFirst()))
    case "throttle-admit":
        try await ThrottleAdmitJob.run(Array(arguments.dropFirst()))
    case "circuit-probe":
        try await CircuitProbeJob.run(Array(arguments.dropFirst()))
    case "gate-send":
        try await GateSendJob.run(Array(arguments.dropFirst()))
    case "gate-coalesce":
        try await GateCoalesceJob.run(Array(arguments.dropFirst()))
    case "cache-store":
        try await CacheStoreJob.run(Array(arguments.dropFirst()))
    case "crash-workload":
        try await CrashWorkloadJob.run(Array(arguments.dropFirst()))
    case "contention-admit":
        try await ContentionJob.run(Array(arguments.dropFirst()))
    case "read-store":
        try await ReadStoreJob.run(Array(arguments.dropFirst()))
    case "fleet-admit":
        try await FleetAdmitJob.run(Array(arguments.dropFirst()))
    case "fleet-circuit":
        try await FleetCircuitJob.run(Array(arguments.dropFirst()))
    case "quiet-app":
        try await QuietAppJob.run(Array(arguments.dropFirst()))
    case "open-store":
        try await OpenStoreJob.run(Array(arguments.dropFirst()))
    default:
        FileHandle.standardError.write(Data("unknown job \(job)\n".utf8))
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
