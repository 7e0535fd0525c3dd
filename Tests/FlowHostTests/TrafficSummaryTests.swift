import FlowHost
import Testing

/// `flowbus tap`'s traffic line (issue 17: it listed every service's workers, past 200 columns).
@Suite("Traffic summary")
struct TrafficSummaryTests {
    static func summary(services: Int, queued: Int, idle: Int) -> TrafficSummary {
        var summary = TrafficSummary()
        summary.requests = 12_345
        summary.replies = 12_300
        summary.rejected = 3
        summary.dropped = 40
        for index in 0..<services { summary.workers["vm.a-rather-long-service-name-\(index)"] = index < idle ? 0 : 2 }
        for index in 0..<queued { summary.queued["vm.a-rather-long-service-name-\(index)"] = 100 + index }
        return summary
    }

    @Test("the line fits its width whatever the number of services, and says how many it leaves out",
          arguments: [(0, 0, 0), (3, 0, 0), (30, 1, 0), (30, 30, 0), (40, 10, 10), (200, 200, 50)])
    func fitsItsWidth(services: Int, queued: Int, idle: Int) {
        let line = Self.summary(services: services, queued: queued, idle: idle).line()
        #expect(line.count <= 80, "\(line.count) columns: \(line)")
        #expect(line.hasPrefix("mdp +12345 req +12300 rep (3 rejected, 40 dropped) · \(services * 2 - idle * 2) workers, \(services) services"), "\(line)")
        if queued + idle > 1 { #expect(line.contains(" +"), "what is left out is counted: \(line)") }
    }

    @Test("a quiet second says only its counts")
    func quiet() {
        var summary = TrafficSummary()
        summary.workers = ["svc.users": 1, "vm.signin": 2]
        #expect(summary.line() == "mdp +0 req +0 rep · 3 workers, 2 services")
    }

    @Test("a service waiting or without a worker is named when it fits")
    func named() {
        var summary = TrafficSummary()
        summary.workers = ["svc.users": 1, "vm.a": 0, "vm.b": 3]
        summary.queued = ["vm.b": 4]
        #expect(summary.line() == "mdp +0 req +0 rep · 4 workers, 3 services · vm.b 4 queued · vm.a no worker")
    }
}
