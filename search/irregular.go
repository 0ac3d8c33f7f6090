package search

import (
	"strings"

	"github.com/blevesearch/bleve/v2/analysis"
)

// irregularFilter turns the past forms of irregular English verbs and the
// irregular plurals of common nouns into their base forms, which the
// Porter stemmer cannot do: "Why did she choose it?" finds "I chose them",
// "Where did he go?" finds "we went", "What did they buy?" finds "I bought".
// It runs after lower-casing and before stop words and stemming.
type irregularFilter struct{}

func (irregularFilter) Filter(input analysis.TokenStream) analysis.TokenStream {
	for _, tok := range input {
		if base, ok := irregularBase[string(tok.Term)]; ok {
			tok.Term = []byte(base)
		}
	}
	return input
}

// irregularForms lists base forms, each followed by its irregular forms
// (past tense, past participle, plural). Forms that are also common words
// of their own are left out: ground, bound, wound, rose, bore, bit, and
// lay (the past of lie and a verb of its own).
const irregularForms = `
arise arose arisen; awake awoke awoken; beat beaten;
become became; begin began begun; bend bent; bite bitten;
bleed bled; blow blew blown; break broke broken; breed bred; bring brought;
build built; burn burnt; buy bought; catch caught; choose chose chosen;
cling clung; come came; creep crept; deal dealt; dig dug; draw drew drawn;
dream dreamt; drink drank drunk; drive drove driven; eat ate eaten;
fall fell fallen; feed fed; feel felt; fight fought; find found; flee fled;
fly flew flown; forbid forbade forbidden; forget forgot forgotten;
forgive forgave forgiven; freeze froze frozen; get got gotten; give gave given;
go went gone; grow grew grown; hang hung; hear heard;
hide hid hidden; hold held; keep kept; kneel knelt; know knew known;
lay laid; lead led; lean leant; leap leapt; learn learnt; leave left;
lend lent; lie lain; light lit; lose lost; make made; mean meant;
meet met; overcome overcame; pay paid; prove proven; ride rode ridden;
ring rang rung; rise risen; run ran; say said; see saw seen; seek sought;
sell sold; send sent; shake shook shaken; shine shone; shoot shot;
show shown; shrink shrank shrunk; sing sang sung; sink sank sunk; sit sat;
sleep slept; slide slid; speak spoke spoken; speed sped; spend spent;
spin spun; spit spat; spring sprang sprung; stand stood; steal stole stolen;
stick stuck; sting stung; stink stank stunk; strike struck; strive strove striven;
swear swore sworn; sweep swept; swim swam swum; swing swung; take took taken;
teach taught; tear tore torn; tell told; think thought; throw threw thrown;
understand understood; undertake undertook undertaken; wake woke woken;
wear wore worn; weave wove woven; weep wept; win won;
withdraw withdrew withdrawn; write wrote written;
child children; man men; woman women; foot feet; tooth teeth; mouse mice;
goose geese; person people
`

// irregularBase maps each irregular form to its base form.
var irregularBase = func() map[string]string {
	m := map[string]string{}
	for _, entry := range strings.Split(irregularForms, ";") {
		words := strings.Fields(entry)
		for _, w := range words[1:] {
			m[w] = words[0]
		}
	}
	return m
}()
