import FlowbusTesting
import Foundation
import Testing
import ZeroMQ
@testable import FlowHost

@Suite struct HostConfigurationTests {
    @Test(arguments: [
        ("ipc:///tmp/x/broker.ipc", true),
        ("inproc://bus", true),
        ("tcp://127.0.0.1:5555", true),
        ("tcp://127.1.2.3:5555", true),
        ("tcp://localhost:5555", true),
        ("tcp://[::1]:5555", true),
        ("tcp://0.0.0.0:5555", false),
        ("tcp://*:5555", false),
        ("tcp://192.168.1.10:5555", false),
        ("tcp://[::]:5555", false),
    ])
    func exposureOfAnEndpoint(endpoint: String, local: Bool) {
        #expect((EndpointExposure(endpoint: endpoint) == .local) == local)
    }

    @Test func listeningBeyondLoopbackRequiresCurveAndAnAllowList() throws {
        var configuration = HostConfiguration(runDirectory: RunDirectory(path: "/tmp/fbh"))
        try configuration.validateExposure()
        configuration.brokerEndpoint = "tcp://0.0.0.0:5555"
        #expect(throws: HostError.curveRequired(endpoint: "tcp://0.0.0.0:5555")) { try configuration.validateExposure() }
        configuration.curveSecretPath = "/tmp/host.key"
        #expect(throws: HostError.self) { try configuration.validateExposure() }
        configuration.allowListPath = "/tmp/allow"
        try configuration.validateExposure()
        #expect(HostError.curveRequired(endpoint: "tcp://0.0.0.0:5555").description.contains("flowbus keys"))
    }

    @Test func defaultEndpointsLiveInTheRunDirectory() {
        let configuration = HostConfiguration(runDirectory: RunDirectory(path: "/tmp/fbh-1"))
        #expect(configuration.resolvedBrokerEndpoint == "ipc:///tmp/fbh-1/broker.ipc")
        #expect(configuration.resolvedCloneBase == "ipc:///tmp/fbh-1/clone")
        #expect(RunDirectory(path: "/tmp/fbh-1").controlEndpoint == "ipc:///tmp/fbh-1/control.ipc")
    }

    @Test func runDirectoryComesFromTheEnvironmentFirst() {
        #expect(RunDirectory.defaultDirectory(environment: ["FLOWBUS_RUN_DIR": "/tmp/elsewhere"]).path == "/tmp/elsewhere")
        #expect(RunDirectory.defaultDirectory(environment: [:]).path == "/tmp/flowbus-\(getuid())/default")
    }

    @Test func workerRoutingIDsCarryThePluginPid() {
        #expect(HeartbeatBridge.pid(fromRoutingID: "echo/4242/1") == 4242)
        #expect(HeartbeatBridge.pid(fromRoutingID: "python-worker") == nil)
        #expect(HeartbeatBridge.pid(fromRoutingID: "a/notapid/1") == nil)
    }
}

@Suite struct RunDirectoryTests {
    @Test func descriptorRoundTripsAndALiveHostIsFound() throws {
        let directory = RunDirectory(path: TestScratch.file("fbh"))
        try directory.create()
        #expect(try directory.readDescriptor() == nil)
        let endpoints = HostEndpoints(
            broker: "ipc://b", cloneSnapshot: "ipc://c.snapshot", clonePublisher: "ipc://c.publisher",
            cloneCollector: "ipc://c.collector", control: directory.controlEndpoint)
        let descriptor = HostDescriptor(
            pid: getpid(), startedAt: Date(timeIntervalSince1970: 1_800_000_000), runDirectory: directory.path,
            endpoints: endpoints, serverPublicKey: nil)
        try directory.writeDescriptor(descriptor)
        #expect(try directory.readDescriptor() == descriptor)
        #expect(try directory.liveHost() == descriptor)
        #expect(endpoints.environment["FLOWBUS_CLONE_COLLECTOR"] == "ipc://c.collector")

        var dead = descriptor
        dead.pid = Int32.max - 1
        try directory.writeDescriptor(dead)
        #expect(try directory.liveHost() == nil)
        directory.removeDescriptor()
        #expect(try directory.readDescriptor() == nil)
    }

    @Test func aCorruptDescriptorIsReportedWithItsPath() throws {
        let directory = RunDirectory(path: TestScratch.file("fbh"))
        try directory.create()
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: directory.descriptorPath))
        #expect {
            try directory.readDescriptor()
        } throws: { error in
            "\(error)".contains(directory.descriptorPath)
        }
    }
}

@Suite struct RunDirectoryOwnershipTests {
    func fresh() throws -> RunDirectory {
        let parent = TestScratch.file("fbo")
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        return RunDirectory(path: parent + "/run")
    }

    func expectUntrusted(_ directory: RunDirectory, naming path: String, _ reason: String) {
        #expect {
            _ = try directory.readDescriptor()
        } throws: { error in
            guard case .untrusted(let refused, let why) = error as? RunDirectoryError else { return false }
            return refused == path && why.contains(reason)
                && "\(error)".contains("--run-dir")
        }
    }

    func descriptor(_ directory: RunDirectory) -> HostDescriptor {
        HostDescriptor(
            pid: getpid(), startedAt: Date(), runDirectory: directory.path,
            endpoints: HostEndpoints(broker: "ipc://b", cloneSnapshot: "ipc://s", clonePublisher: "ipc://p", cloneCollector: "ipc://c", control: "ipc://x"),
            serverPublicKey: nil)
    }

    /// A fresh run directory with a host descriptor in it.
    func announced() throws -> RunDirectory {
        let directory = try fresh()
        try directory.create()
        try directory.writeDescriptor(descriptor(directory))
        return directory
    }

    @Test func aFolderOfOursIsUsedAndItsDescriptorIsOwnerOnly() throws {
        let directory = try announced()
        #expect(try directory.readDescriptor() != nil)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.descriptorPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test func aRunDirectoryOthersMayWriteIsRefused() throws {
        let directory = try announced()
        chmod(directory.path, 0o777)
        expectUntrusted(directory, naming: directory.path, "group or others may write to it (mode 777)")
        #expect(throws: RunDirectoryError.self) { try directory.create() }
    }

    @Test func aDescriptorOthersMayWriteIsRefused() throws {
        let directory = try announced()
        chmod(directory.descriptorPath, 0o666)
        expectUntrusted(directory, naming: directory.descriptorPath, "group or others may write")
    }

    @Test func aParentOthersMayWriteIsRefusedUnlessItIsSticky() throws {
        let directory = try announced()
        let parent = (directory.path as NSString).deletingLastPathComponent
        chmod(parent, 0o777)
        expectUntrusted(directory, naming: parent, "mode 777")
        chmod(parent, 0o1777)  // like /tmp: others may add entries but not replace ours
        #expect(try directory.readDescriptor() != nil)
    }

    @Test func aRunDirectoryOfAnotherUserIsRefused() throws {
        let directory = try announced()
        if geteuid() == 0 {
            #expect(chown(directory.descriptorPath, 65534, 65534) == 0)
            expectUntrusted(directory, naming: directory.descriptorPath, "belongs to uid 65534, not to you (uid 0)")
        } else {
            // Not root: a folder owned by root is trusted, so take one we cannot own — none can be
            // made without root; check the other half of the rule instead.
            chmod(directory.descriptorPath, 0o620)
            expectUntrusted(directory, naming: directory.descriptorPath, "group or others may write")
        }
    }

    @Test func aRunDirectoryThatIsASymbolicLinkIsRefused() throws {
        let target = try fresh()
        try target.create()
        let link = RunDirectory(path: (target.path as NSString).deletingLastPathComponent + "/link")
        #expect(symlink(target.path, link.path) == 0)
        try target.writeDescriptor(descriptor(target))
        expectUntrusted(link, naming: link.path, "symbolic link")
    }
}

@Suite struct KeyFilesTests {
    @Test func aKeyContainingTheCommentCharacterIsStillRead() throws {
        // Z85 has `#` among its digits; only a word that starts with it is a comment.
        var pair = try CurveKeyPair.generate()
        while !pair.publicKey.z85.dropFirst().contains("#") { pair = try CurveKeyPair.generate() }
        let path = TestScratch.file("fbk", suffix: ".allow")
        try Data("\(pair.publicKey.z85) # with a comment\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try KeyFiles.readAllowList(path: path) == [pair.publicKey])
    }

    @Test func keyPairsAndAllowListsRoundTrip() throws {
        let base = TestScratch.file("fbk")
        let pair = try CurveKeyPair.generate()
        try KeyFiles.write(pair, basePath: base)
        #expect(try KeyFiles.readSecret(path: base + ".key") == pair)
        #expect(try KeyFiles.readPublic(path: base + ".pub") == pair.publicKey)

        let other = try CurveKeyPair.generate()
        let allowPath = base + ".allow"
        try Data("# the team\n\(pair.publicKey.z85)  # alice\n\n\(other.publicKey.z85)\n".utf8).write(to: URL(fileURLWithPath: allowPath))
        #expect(try KeyFiles.readAllowList(path: allowPath) == [pair.publicKey, other.publicKey])
    }

    @Test func aBadAllowListLineIsNamed() throws {
        let path = TestScratch.file("fbk", suffix: ".allow")
        try Data("# ok\nnot-a-key\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect {
            try KeyFiles.readAllowList(path: path)
        } throws: { error in
            "\(error)".contains("line 2")
        }
        #expect(throws: HostError.self) { try KeyFiles.readSecret(path: "/tmp/definitely-missing.key") }
    }
}
