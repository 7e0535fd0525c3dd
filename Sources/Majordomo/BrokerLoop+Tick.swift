import Synchronization
import MessagePath
import Logging
import Foundation
import ZeroMQ

extension BrokerLoop {
    /// The periodic work: heartbeats, dead workers, expired requests, published counters.
    ///
    /// `caughtUp` is false for a tick in the middle of a long drain (a flood of requests, bad
    /// or good): a worker's HEARTBEAT may be waiting behind the flood in the socket's queue,
    /// so no worker is declared dead until the broker has read everything that arrived.
    func tick(caughtUp: Bool = true) {
        now = .now()
        heartbeatWorkers(expiring: caughtUp)
        expireWaitingRequests()
        publish()
        nextTick = now + configuration.statisticsInterval
    }

    /// Heartbeats the quiet workers and expires the silent ones. A quiet worker gets its heartbeat
    /// at the last tick before one falls due, so never later than the interval; in a tick where
    /// any does, every worker past half its interval gets one too. The idle workers' heartbeats
    /// then go out together, and, as a worker answers one at once when its own is due within half
    /// an interval, their heartbeats come back together: one wake-up of the broker for all of
    /// them rather than one each.
    private func heartbeatWorkers(expiring: Bool) {
        var dead: [WorkerEntry] = []
        let due = heartbeatInterval - min(configuration.statisticsInterval, heartbeatInterval / 4)
        let early = heartbeatInterval / 2
        let anyDue = workers.values.contains { now.since($0.lastSent) >= due && now.since($0.lastHeard) < workerExpiry }
        for worker in workers.values {
            if now.since(worker.lastHeard) >= workerExpiry {
                if expiring { dead.append(worker) } else { tally.expiriesPostponed += 1 }
            } else if anyDue && now.since(worker.lastSent) >= early {
                // Only idle or quiet workers get here: a REQUEST sent recently already counts as a heartbeat.
                let unroutableBefore = tally.unroutable
                if sendWorkerCommand(MDP.heartbeatFrame, to: worker.identity) {
                    tally.heartbeatsSent += 1
                    worker.lastSent = now
                } else if tally.unroutable > unroutableBefore {
                    // Gone, but its last words (a DISCONNECT) may still wait unread in the socket:
                    // `run` reads them before it calls the worker dead.
                    unroutableWorkers.append(worker)
                }
            }
        }
        for worker in dead {
            expireWorker(worker, why: "silent for \(workerExpiry)")
        }
    }

    /// Expires the workers a heartbeat found unroutable that are still registered once everything
    /// waiting on the socket has been read: a worker that said DISCONNECT before it went is
    /// removed by that, not counted as expired.
    func expireUnroutableWorkers() {
        let gone = unroutableWorkers
        unroutableWorkers.removeAll()
        for worker in gone where workers[FrameKey(worker.identity)] === worker {
            expireWorker(worker, why: "its connection closed without a DISCONNECT")
        }
    }

    private func expireWorker(_ worker: WorkerEntry, why: String) {
        tally.workersExpired += 1
        removeWorker(worker)
        expiredIdentities.insert(worker.identity)
        logger.info("worker expired: \(why)", metadata: [
            "flowbus.peer": "\(worker.identity.printable)", "flowbus.service": "\(worker.service.displayName)",
        ])
    }

    private func expireWaitingRequests() {
        var empty: [Frame] = []
        for service in services.values {
            while let first = service.waiting.first, first.expiresAt <= now {
                _ = service.waiting.popFirst()
                expire(first, service: service)
            }
            if service.workerCount == 0 && service.waiting.isEmpty { empty.append(service.name) }
        }
        for name in empty { services[FrameKey(name)] = nil }
    }

    /// Copies the counters and the worker table to where `BrokerHandle` reads them.
    func publish() {
        var statistics = tally
        var perService: [String: Int] = [:]
        var queued: [String: Int] = [:]
        for service in services.values {
            if service.workerCount > 0 { perService[service.displayName] = service.workerCount }
            if !service.waiting.isEmpty { queued[service.displayName] = service.waiting.count }
        }
        statistics.workersPerService = perService
        statistics.queuedPerService = queued
        let wallNow = Date()
        statistics.takenAt = wallNow
        let infos = workers.values.map { worker in
            WorkerInfo(
                routingID: worker.printableIdentity,
                service: worker.service.displayName,
                lastHeard: wallNow.addingTimeInterval(-now.since(worker.lastHeard).seconds),
                requestsServed: worker.served,
                busy: !worker.inFlight.isEmpty,
                inFlight: worker.inFlight.count,
                credit: worker.credit
            )
        }
        shared.flushRequested.store(false, ordering: .relaxed)
        shared.publish(statistics, infos)
    }

    /// On stop: tells every worker to reconnect elsewhere (or to this endpoint once a new broker binds it).
    func sayGoodbye() {
        for worker in workers.values {
            sendWorkerCommand(MDP.disconnectFrame, to: worker.identity)
        }
    }
}
