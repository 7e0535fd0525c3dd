import MessagePath
import Logging
import ZeroMQ

// Messages are written frame by frame, so no joined array is built per message.
// ROUTER_MANDATORY reports a gone peer on the identity frame; later frames cannot fail for that reason.
extension BrokerLoop {
    /// Starts a message to `peer`; false (and counted) when the peer is gone or its queue is full.
    func begin(to peer: Frame) -> Bool {
        do {
            if try socket.send(peer, more: true, dontWait: true) { return true }
            tally.sendBlocked += 1
            return false
        } catch {
            if error.code == .hostUnreachable {
                tally.unroutable += 1
            } else if error.code != .terminated {
                logger.warning("broker send failed", metadata: ["flowbus.peer": "\(peer.printable)", "flowbus.error": "\(error)"])
            }
            return false
        }
    }

    @inline(__always)
    func part(_ frame: Frame) {
        _ = try? socket.send(frame, more: true)
    }

    /// Sends `frames[start...]` as the end of the message (at least one frame: an empty one if none).
    func finish(with frames: [Frame], from start: Int) {
        guard start < frames.count else {
            _ = try? socket.send(MDP.empty)
            return
        }
        let last = frames.count - 1
        var index = start
        while index < last {
            _ = try? socket.send(frames[index], more: true)
            index += 1
        }
        _ = try? socket.send(frames[last])
    }

    /// `"" MDPC01 service body...` to a client.
    @discardableResult
    func sendClientReply(to client: Frame, service: Frame, body: [Frame], from start: Int) -> Bool {
        guard begin(to: client) else { return false }
        part(MDP.empty)
        part(MDP.clientHeader)
        part(service)
        finish(with: body, from: start)
        return true
    }

    /// `"" MDPW01 0x02 client "" body...` to a worker.
    func sendRequest(to worker: WorkerEntry, client: Frame, body: [Frame], from start: Int) -> Bool {
        guard begin(to: worker.identity) else { return false }
        part(MDP.empty)
        part(MDP.workerHeader)
        part(MDP.requestFrame)
        part(client)
        part(MDP.empty)
        finish(with: body, from: start)
        worker.lastSent = now
        return true
    }

    /// `"" MDPW01 <command>` (HEARTBEAT or DISCONNECT) to a worker.
    @discardableResult
    func sendWorkerCommand(_ command: Frame, to peer: Frame) -> Bool {
        guard begin(to: peer) else { return false }
        part(MDP.empty)
        part(MDP.workerHeader)
        _ = try? socket.send(command)
        return true
    }
}
