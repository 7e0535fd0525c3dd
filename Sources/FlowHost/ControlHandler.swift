import Clone
import Foundation
import Majordomo
import MessagePath
import Supervision
import ZeroMQ

/// Answers one control request from the parts of a running host.
struct ControlHandler {
    let host: Host
    let descriptor: HostDescriptor
    let supervisor: Supervisor
    let broker: BrokerHandle
    let clone: CloneServerHandle
    let faults: FaultRules
    let processes: ProcessFaultInjector
    let security: BusSecurity
    let history: SessionHistory
    let memory: MemoryTrimmer

    func handle(_ request: ControlRequest) -> Data {
        switch request.command {
        case .ping:
            return encode(ControlReply(ok: true, body: descriptor))
        case .status:
            return encode(ControlReply(ok: true, body: status()))
        case .down:
            host.requestStop()
            return encode(ControlReply(ok: true, body: Empty()))
        case .faultSet:
            guard let rule = request.rule else {
                return failure("fault.set needs a rule: use `flowbus fault drop --service PREFIX --share 0.5`")
            }
            do {
                try faults.install(rule)
                return encode(ControlReply(ok: true, body: Empty()))
            } catch {
                return failure(error.description)
            }
        case .faultClear:
            if let id = request.ruleID {
                guard faults.remove(id: id) else {
                    return failure("no fault rule has the id \(id); `flowbus fault list` shows the ids")
                }
            } else {
                host.cancelPlan()
                faults.removeAll()
            }
            return encode(ControlReply(ok: true, body: Empty()))
        case .faultList:
            return encode(ControlReply(ok: true, body: faults.status))
        case .faultDecisions:
            let (decisions, total) = faults.decisions(after: request.after ?? 0)
            let plan = host.plan
            return encode(ControlReply(ok: true, body: FaultDecisionLog(
                seed: faults.seed, total: total, decisions: decisions, plan: plan?.plan.name, planFinished: plan?.finished)))
        case .faultReset:
            host.cancelPlan()
            faults.removeAll()
            faults.reset(seed: request.seed ?? faults.seed)
            return encode(ControlReply(ok: true, body: Empty()))
        case .faultPlan:
            guard let plan = request.plan else {
                return failure("fault.plan needs a plan: use `flowbus fault plan FILE`")
            }
            let known = Set(supervisor.status().map(\.name))
            for event in plan.events {
                if let plugin = event.plugin, !known.contains(plugin) {
                    return failure("the plan names plugin \(plugin), which this host does not run; `flowbus ps` lists its plugins")
                }
            }
            if request.beside == true {
                var plan = plan
                do {
                    for index in plan.events.indices {
                        switch plan.events[index].fault {
                        case .killServing(let service, let session):
                            let instance = try processes.serving(service: service, session: session)
                            plan.events[index].fault = .kill(plugin: instance.plugin, replica: instance.replica)
                        case .stopServing(let service, let session):
                            let instance = try processes.serving(service: service, session: session)
                            plan.events[index].fault = .stop(plugin: instance.plugin, replica: instance.replica)
                        default:
                            break
                        }
                    }
                } catch {
                    return failure(error.description)
                }
                host.playBeside(plan, faults: faults, processes: processes)
                // What was done, with the process a session pointed at named.
                return encode(ControlReply(ok: true, body: plan.events.map(\.summary)))
            } else {
                host.play(plan, faults: faults, processes: processes)
            }
            return encode(ControlReply(ok: true, body: Empty()))
        case .trace:
            return trace(session: request.session ?? "")
        case .sessionClients:
            return encode(ControlReply(ok: true, body: clone.sessionFollowers))
        }
    }

    func trace(session: String) -> Data {
        guard !session.isEmpty else {
            return failure("trace needs a session id: `flowbus trace SESSION` (`flowbus sessions` lists the live ones)")
        }
        guard history.isRecording else {
            return failure("this host keeps no session history (it was started with --history-sessions 0), so it cannot trace \(session); start it again without that option, or with --history-sessions N, to record sessions")
        }
        guard let trace = history.trace(session: session) else {
            let recorded = history.statistics.sessions
            return failure("this host has recorded nothing for session \(session) (it keeps the history of its last \(history.limits.sessions) sessions since it started; it holds \(recorded) now); check the id with `flowbus sessions`")
        }
        return encode(ControlReply(ok: true, body: trace))
    }

    func status() -> HostStatus {
        HostStatus(
            host: descriptor,
            uptimeSeconds: Date().timeIntervalSince(descriptor.startedAt),
            plugins: supervisor.status(),
            broker: broker.statistics,
            workers: broker.workers,
            clone: clone.statistics,
            faults: faults.status,
            curveDenied: security.curve == nil ? nil : security.authenticator?.decisions.denied,
            memory: memory.statistics,
            connectionsRateLimited: security.connections?.refusedCount,
            hostCPU: host.pinnedCPU,
            placement: host.configuration.placement.rawValue
        )
    }

    private func failure(_ text: String) -> Data {
        encode(ControlReply<Empty>(ok: false, error: text))
    }

    private func encode<Body>(_ reply: ControlReply<Body>) -> Data {
        (try? JSONEncoder.flowbus.encode(reply)) ?? Data(#"{"ok":false,"error":"the host could not encode its reply"}"#.utf8)
    }
}
