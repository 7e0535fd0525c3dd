@_spi(Fuzzing) import Clone
@_spi(Fuzzing) import FlowChaos
import Foundation
import FlowProtocol
import Majordomo
import SwiftProtobuf
import Supervision
import WireCheck

/// The decoders that read what a peer, a plugin author or the disk hands the host, each with the
/// property a fuzzer checks besides "no crash": whatever decodes, encodes and decodes again to
/// the same value. A broken property stops the process (`fatalError`), which libFuzzer records
/// as a crash and the replay tests as a failure.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// 7/MDP commands: first byte picks how the message arrived (to the broker, from it, or
    /// routed with a peer identity in front); the rest is frames (`FuzzFrames`).
    case mdp
    /// 12/CHP messages: first byte picks the channel (bits 0-1), liberal reading (bit 2) and a
    /// 64-byte value limit (bit 3); the rest is frames.
    case chp
    /// A Flowbus envelope (a body frame or Clone value), and its payload when `kind` names a
    /// Flowbus message.
    case envelope
    /// A plugin manifest (YAML).
    case manifest
    /// The Clone server's journal file, read at every start.
    case journal
    /// A KVSETS batch's packed writes (`KVSetBatch`), as a Flowbus collector reads them.
    case kvsets
    /// One session of a chaos run's run.json, as `flowbus chaos check` reads it (`RunJSONReader`):
    /// what the reader reads, `JSONDecoder` reads the same (where both read it).
    case runjson

    /// Runs one input: whether the decoder accepted it. Stops the process when a property breaks.
    @discardableResult
    public func run(_ data: [UInt8]) -> Bool {
        switch self {
        case .mdp: Self.mdp(data)
        case .chp: Self.chp(data)
        case .envelope: Self.envelope(data)
        case .manifest: Self.manifest(data)
        case .journal: Self.journal(data)
        case .kvsets: Self.kvsets(data)
        case .runjson: Self.runjson(data)
        }
    }

    private static func broken(_ target: String, _ what: String, _ input: [UInt8]) -> Never {
        fatalError("fuzz \(target): \(what) (input \(input.count) bytes: \(input.prefix(64).map { String(format: "%02x", $0) }.joined()))")
    }

    private static func mdp(_ data: [UInt8]) -> Bool {
        let mode = (data.first ?? 0) % 3
        let frames = FuzzFrames.split(data.dropFirst())
        if mode == 2 {
            guard let (peer, command) = try? MDPCommand.decode(routed: frames) else { return false }
            guard peer == frames[0] else { broken("mdp", "the routed peer is not frame 0", data) }
            check(command, direction: .toBroker, data)
            return true
        }
        let direction: MDPDirection = mode == 0 ? .toBroker : .fromBroker
        guard let command = try? MDPCommand.decode(frames, direction: direction) else { return false }
        check(command, direction: direction, data)
        return true
    }

    private static func check(_ command: MDPCommand, direction: MDPDirection, _ data: [UInt8]) {
        let again: MDPCommand
        do {
            again = try MDPCommand.decode(command.frames, direction: direction)
        } catch {
            broken("mdp", "\(command.name) encoded does not decode (\(error))", data)
        }
        guard again == command else { broken("mdp", "\(command.name) decoded, encoded and decoded again differs", data) }
    }

    private static func chp(_ data: [UInt8]) -> Bool {
        let mode = data.first ?? 0
        let channels: [CloneChannel] = [.snapshotRequest, .snapshotReply, .publisher, .collector]
        let channel = channels[Int(mode & 3)]
        let limit = mode & 8 != 0 ? 64 : Int.max
        let frames = FuzzFrames.split(data.dropFirst())
        let message: CloneMessage
        do {
            message = mode & 4 != 0
                ? try CloneMessage.decodeLiberally(frames, on: channel, maxValueBytes: limit).message
                : try CloneMessage.decode(frames, on: channel, maxValueBytes: limit)
        } catch {
            // Every refusal has words for the person reading the counter's log line.
            guard !"\(error)".isEmpty else { broken("chp", "a refusal without a description", data) }
            return false
        }
        // What a server or client accepted, it also sends exactly as 12/CHP has it.
        let again: CloneMessage
        do {
            again = try CloneMessage.decode(message.frames, on: channel, maxValueBytes: limit)
        } catch {
            broken("chp", "\(message) encoded does not decode strictly (\(error))", data)
        }
        guard again == message else { broken("chp", "\(message) decoded, encoded and decoded again is \(again)", data) }
        return true
    }

    private static func envelope(_ data: [UInt8]) -> Bool {
        // The bytes as they came (the check turns nearly all of them away, and must never crash),
        // then sealed, so the fuzzer explores what lies behind the check too.
        _ = try? Envelope.decodeChecked(data)
        guard let envelope = try? Envelope.decodeChecked(WireCheck.sealed(data)) else { return false }
        let again: Envelope
        do {
            again = try Envelope.decodeChecked(try envelope.encoded())
        } catch {
            broken("envelope", "a decoded envelope does not encode and decode (\(error))", data)
        }
        guard again == envelope else { broken("envelope", "decoded, encoded and decoded again differs", data) }
        guard let type = PayloadKinds.type(named: envelope.kind), let payload = try? type.init(serializedBytes: envelope.payload) else { return true }
        // What `flowbus trace` and the tap do with a payload they can read.
        _ = payload.textFormatString()
        guard let bytes: [UInt8] = try? payload.serializedBytes(), let reread = try? type.init(serializedBytes: bytes),
              reread.isEqualTo(message: payload) else {
            broken("envelope", "a \(envelope.kind) payload decoded, encoded and decoded again differs", data)
        }
        return true
    }

    private static func manifest(_ data: [UInt8]) -> Bool {
        let base = URL(fileURLWithPath: "/nonexistent/flowbus-fuzz")
        guard let manifest = try? Manifest.parse(yaml: String(decoding: data, as: UTF8.self), baseDirectory: base) else { return false }
        let written: String
        do {
            written = try manifest.yaml()
        } catch {
            broken("manifest", "a valid manifest cannot be written as YAML (\(error))", data)
        }
        let again: Manifest
        do {
            again = try Manifest.parse(yaml: written, baseDirectory: base)
        } catch {
            broken("manifest", "a valid manifest written as YAML does not read back (\(error)):\n\(written)", data)
        }
        guard again == manifest else { broken("manifest", "a valid manifest written and read back differs:\n\(written)", data) }
        return true
    }

    /// Read to its end, a batch packs again to the same bytes; cut short, it says where.
    private static func kvsets(_ data: [UInt8]) -> Bool {
        data.withUnsafeBytes { frame in
            var reader = KVSetBatch.Reader(frame)
            var entries: [KVSetBatch.Entry] = []
            do {
                while let entry = try reader.next() { entries.append(entry) }
            } catch {
                guard "\(error)".contains("KVSETS batch") else { broken("kvsets", "a refusal that does not say it is a batch's: \(error)", data) }
                return false
            }
            // The reader takes a UUID of 16 bytes and a key of at most 255: any entry packs again.
            let again = KVSetBatch.packed(entries.map { (Array($0.key), Array($0.uuid), Array($0.properties), Array($0.value)) })
            guard again.elementsEqual(frame) else { broken("kvsets", "a batch read to its end packs again to other bytes", data) }
            return true
        }
    }

    private static func runjson(_ data: [UInt8]) -> Bool {
        let record: ChaosSessionRecord
        switch ChaosSessionRecord.readAlone(data) {
        case .success(let read): record = read
        case .failure(let refusal):
            guard "\(refusal)".contains("run.json at byte") else { broken("runjson", "a refusal that does not say where: \(refusal)", data) }
            return false
        }
        // The reader stands in for JSONDecoder: where both read a session, they read the same.
        // (The reader may read what JSONDecoder refuses, in members it skips without checking.)
        if let decoded = try? JSONDecoder().decode(ChaosSessionRecord.self, from: Data(data)), decoded != record {
            broken("runjson", "RunJSONReader read \(record), JSONDecoder \(decoded)", data)
        }
        return true
    }

    private static func journal(_ data: [UInt8]) -> Bool {
        if let problem = CloneJournalCodec.roundTripProblem(data) { broken("journal", problem, data) }
        return !data.isEmpty
    }
}

extension FuzzTarget {
    /// The target FLOWBUS_FUZZ_TARGET names, read once; stops the process with the list when it names none.
    public static let selected = fromEnvironment()

    static func fromEnvironment() -> FuzzTarget {
        let name = ProcessInfo.processInfo.environment["FLOWBUS_FUZZ_TARGET"] ?? ""
        if let target = FuzzTarget(rawValue: name) { return target }
        let names = allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("FLOWBUS_FUZZ_TARGET is \(name.isEmpty ? "not set" : "`\(name)`"): set it to one of \(names), or run scripts/fuzz TARGET\n".utf8))
        exit(2)
    }
}
