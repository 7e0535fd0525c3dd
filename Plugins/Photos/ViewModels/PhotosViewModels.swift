import FlowKit
import FlowProtocol

/// Every view model of the Photos app by screen kind, built over `services` (one instance per
/// session), for `photos-viewmodel --screen KIND`.
public enum PhotosViewModels {
    public static func factories(services: PhotosServices) -> [String: ViewModelRuntime.Factory] {
        [
            LoginViewModel.screen: { LoginViewModel(session: $0, accounts: services.accounts) },
            CreateAccountViewModel.screen: { CreateAccountViewModel(session: $0, accounts: services.accounts) },
            ForgotPasswordViewModel.screen: { ForgotPasswordViewModel(session: $0, accounts: services.accounts) },
            ResetPasswordViewModel.screen: { ResetPasswordViewModel(session: $0, accounts: services.accounts) },
            BrowseViewModel.screen: { BrowseViewModel(session: $0, accounts: services.accounts, photos: services.photos) },
            PhotoViewModel.screen: { PhotoViewModel(session: $0, accounts: services.accounts, photos: services.photos) },
            LikesViewModel.screen: { LikesViewModel(session: $0, accounts: services.accounts, photos: services.photos) },
            ProfileViewModel.screen: { ProfileViewModel(session: $0, accounts: services.accounts) },
        ]
    }
}
