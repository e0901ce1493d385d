import AppDevelopers
import Postbacks

extension RegistryStore where Contents == AppRegistry {
    /// Which versions of its app's schema a postback's value reads with, as every export says it
    /// (`schema_version`, `schema_ambiguous_versions`): the Apps view's rule, applied to one postback.
    var postbackSchemaVersions: PostbackExportCodec.SchemaVersionReader {
        { [self] postback in
            guard let set = AppsSummary.Facts(postback).valueSet(receivedAt: postback.receivedAt),
                  let history = registry.history(appID: set.appID) else { return nil }
            return history.resolve(history.reading(set.window)).versions
        }
    }
}
