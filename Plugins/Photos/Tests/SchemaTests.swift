import FlowKit
import FlowProtocol
import PhotosApp
import Testing

@Suite struct PhotosSchemaTests {
    @Test func theBundledSchemaDefinesTheAppsPayloads() throws {
        let schema = try PhotosSchema.bundled()
        #expect(schema.package == "photos.v1")
        let messages = schema.set.file.filter { $0.package == "photos.v1" }.flatMap { $0.messageType.map(\.name) }
        for name in ["Photo", "PhotoList", "Account", "Author"] {
            #expect(messages.contains(name), "photos.v1.\(name) is not in Resources/schema.pb; run scripts/generate-protos.sh")
        }
    }

    @Test func theViewModelsPayloadKindsAreInTheSchema() {
        #expect(ScreenPayload(Photos_V1_PhotoList()).kind == "photos.v1.PhotoList")
        #expect(ScreenPayload(Photos_V1_Photo()).kind == "photos.v1.Photo")
        #expect(ScreenPayload(Photos_V1_Account()).kind == "photos.v1.Account")
    }
}
